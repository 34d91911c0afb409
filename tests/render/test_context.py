"""Context past a model's native window: answered at the asked context with a note when it needs RoPE
scaling, one verdict, the curve to the asked context; refused past every documented window."""

from __future__ import annotations

import pytest

from bot.params import BadValue
from bot.render.charts import chart_description
from bot.render.replies import fit_reply
from bot.requests import FitRequest
from bot.service import Service
from catalog.schema import ContextExtension
from estimator.verdict import fit

YARN = ContextExtension(method="yarn", factor=4, extended_context=131072,
                        source="https://huggingface.co/Qwen/Qwen3-8B (model card: YaRN for 131,072 tokens)")


@pytest.fixture(scope="module")
def svc() -> Service:
    service = Service()
    native = service.catalog.model("qwen3-8b")
    service.extra_models["qwen3-8b-yarn"] = native.model_copy(update={"max_context": 32768,
                                                                       "context_extension": YARN})
    return service


def test_scaled_context_is_answered_with_a_note(svc: Service) -> None:
    req = FitRequest(gpu="h100 sxm", model="qwen3-8b-yarn", ctx="128k")
    reply = fit_reply(svc, req, locale="en-US")
    text = reply.embeds[0]["description"]
    assert "context 128k" in text
    assert "128k is past Qwen3-8B's native 32k window: it needs YaRN RoPE scaling ×4 (documented up to 128k)" in text
    assert "`--rope-scaling yarn --rope-scale 4 --yarn-orig-ctx 32768`" in text
    # One verdict: every format that runs at 128k also reaches at least 128k with RoPE scaling.
    q, formats = svc.base_query(req)
    for option in fit(q, formats).options:
        if option.fits:
            assert option.max_ctx_scaled is not None and option.max_ctx_scaled >= 131072
    chart = chart_description(reply.files[0].data)
    assert chart is not None and {s["x_last"] for s in chart["series"]} == {131072}
    zh = fit_reply(svc, req, locale="zh-CN").embeds[0]["description"]
    assert "超出了 Qwen3-8B 的原生窗口 32k：需要 YaRN RoPE 缩放 ×4" in zh


def test_native_context_has_no_note_and_stops_at_the_native_window(svc: Service) -> None:
    reply = fit_reply(svc, FitRequest(gpu="h100 sxm", model="qwen3-8b-yarn", ctx="16k"), locale="en-US")
    assert "RoPE" not in reply.embeds[0]["description"]
    chart = chart_description(reply.files[0].data)
    assert chart is not None and {s["x_last"] for s in chart["series"]} == {32768}


def test_past_every_window_is_refused_in_the_askers_language(svc: Service) -> None:
    with pytest.raises(BadValue) as err:
        svc.base_query(FitRequest(gpu="h100 sxm", model="qwen3-8b-yarn", ctx="256k"))
    assert str(err.value) == "256k is past Qwen3-8B's longest documented context (128k); ask for at most 128k"
    assert err.value.text("zh-CN").startswith("256k 超出了 Qwen3-8B 公布的最长上下文（128k）")


def _max_context_lines(svc: Service, ctx: str, locale: str) -> list[str]:
    reply = fit_reply(svc, FitRequest(gpu="t4", model="qwen3-8b-yarn", quant="Q4_K_M", ctx=ctx), locale=locale)
    return [line for f in reply.embeds[0]["fields"] for line in f["value"].splitlines()
            if line.startswith(("Max context", "最大上下文"))]


def test_largest_context_does_not_move_with_the_asked_context(svc: Service) -> None:
    short = _max_context_lines(svc, "8k", "en-US")
    assert short == _max_context_lines(svc, "128k", "en-US")
    assert short == ["Max context 32k (71,054 with RoPE scaling)"]
    zh = _max_context_lines(svc, "8k", "zh-CN")
    assert zh == _max_context_lines(svc, "128k", "zh-CN") == ["最大上下文 32k（启用 RoPE 缩放时 71,054）"]


def test_no_scaled_figure_without_a_documented_extension(svc: Service) -> None:
    reply = fit_reply(svc, FitRequest(gpu="t4", model="llama-3.1-8b", quant="Q4_K_M"), locale="en-US")
    assert not any("RoPE" in f["value"] for f in reply.embeds[0]["fields"])


def test_a_prompt_longer_than_the_context_is_said_to_be_capped(svc: Service) -> None:
    req = FitRequest(gpu="t4", model="qwen3-8b", quant="Q4_K_M", prompt="100k")
    text = fit_reply(svc, req, locale="en-US").embeds[0]["description"]
    assert "prompt 8k tokens" in text
    assert "The prompt of 100k tokens is longer than the 8k context: capped to 8k tokens." in text
    zh = fit_reply(svc, req, locale="zh-CN").embeds[0]["description"]
    assert "提示词 100k tokens 超过了上下文 8k：已截断为 8k tokens。" in zh


def test_a_prompt_within_the_context_has_no_cap_note(svc: Service) -> None:
    text = fit_reply(svc, FitRequest(gpu="t4", model="qwen3-8b", quant="Q4_K_M", prompt="8k"), locale="en-US")
    assert "capped" not in text.embeds[0]["description"]


def test_the_longest_context_is_said_as_it_can_be_asked_for(svc: Service) -> None:
    # Mistral NeMo documents 128,000 tokens; `ctx:128k` is 131,072. It answered "128k is past … (128k); ask for
    # at most 128k", which asked again is refused again. Its "128k" is the 128,000 window: the answer is for that.
    q, _ = svc.base_query(FitRequest(gpu="h100 sxm", model="mistral-nemo", ctx="128k"))
    assert q.ctx == 128000
    with pytest.raises(BadValue) as err:
        svc.base_query(FitRequest(gpu="h100 sxm", model="mistral-nemo", ctx="256k"))
    assert str(err.value).endswith("longest documented context (128,000); ask for at most 128,000")
    q, _ = svc.base_query(FitRequest(gpu="h100 sxm", model="mistral-nemo", ctx="128,000"))
    assert q.ctx == 128000


def test_a_binary_1m_means_a_decimal_1m_window(svc: Service) -> None:
    # `ctx:1M` is 1,048,576 tokens; Qwen2.5-7B-Instruct-1M's "1M" window is 1,010,000: the answer is for that window.
    q, _ = svc.base_query(FitRequest(gpu="h200 sxm", model="qwen2.5-7b-instruct-1m", ctx="1M"))
    assert q.ctx == 1_010_000
    with pytest.raises(BadValue):  # twice the window is no rounding of it
        svc.base_query(FitRequest(gpu="h200 sxm", model="qwen2.5-7b-instruct-1m", ctx="2M"))
    q, _ = svc.base_query(FitRequest(gpu="h200 sxm", model="qwen2.5-7b-instruct-1m", ctx="512k"))
    assert q.ctx == 524_288  # inside the window: as asked


def test_rank_at_1m_lists_the_models_whose_1m_window_is_decimal(svc: Service) -> None:
    from bot.requests import RankRequest

    _, rows = svc.rank(RankRequest.of(gpu="h200 sxm", ctx="1M"))
    ids = {r.model.id for r in rows}
    assert "qwen2.5-7b-instruct-1m" in ids  # its window is 1,010,000 tokens
    _, rows = svc.rank(RankRequest.of(gpu="h200 sxm", ctx="2M"))
    assert "qwen2.5-7b-instruct-1m" not in {r.model.id for r in rows}
