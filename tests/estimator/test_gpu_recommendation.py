"""/gpu's recommendation calls its picks comfortable: each must be one /fit calls "fits" (not "tight") in the
stated format at the stated context, by the same verdict function."""

from __future__ import annotations

import pytest

from catalog.store import load_catalog
from estimator.advice import LONG_CONTEXT, gpu_card
from estimator.memory import memory
from estimator.query import DEFAULT_CTX, Query
from estimator.verdict import fit

CAT = load_catalog()


@pytest.mark.parametrize(
    "gpu_id", ["nvidia-t4", "nvidia-rtx-3090", "nvidia-rtx-4090", "nvidia-a100-40gb-pcie", "nvidia-rtx-3060-12gb"])
def test_comfortable_picks_are_ones_fit_calls_fits(gpu_id: str) -> None:
    gpu = CAT.gpu(gpu_id)
    rec = gpu_card(CAT, gpu).recommendation
    for pick, ctx in ((rec.comfortable_high_precision, DEFAULT_CTX), (rec.long_context_q4, LONG_CONTEXT)):
        assert pick.model is not None, (gpu_id, pick.level)
        q = Query(gpu=gpu, model=pick.model, quant=pick.quant, ctx=ctx)
        # What /fit shows for that format at that context (the option of `fit`, not a recomputation).
        option = next(o for o in fit(q, [pick.quant]).options if o.quant.id == pick.quant.id)
        assert option.memory.verdict == "fits", (gpu_id, pick.model.id, pick.quant.id, ctx, option.memory.verdict)


def test_a_larger_model_that_is_only_tight_is_passed_over() -> None:
    # ERNIE-4.5-21B-A3B at Q8_0 on a 3090 is tight (22.8 of 23.7 GiB): the card used to call it comfortable.
    gpu, ernie = CAT.gpu("nvidia-rtx-3090"), CAT.model("ernie-4.5-21b-a3b")
    q8 = CAT.quant("q8_0")
    assert memory(Query(gpu=gpu, model=ernie, quant=q8)).verdict == "tight"
    pick = gpu_card(CAT, gpu).recommendation.comfortable_high_precision.model
    assert pick is not None and pick.id != ernie.id
