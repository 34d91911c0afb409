"""Each physical term of the speed model does what its physics says, with the committed constants."""

from __future__ import annotations

import math
from itertools import pairwise

import pytest

from catalog import load_catalog
from catalog.arch import active_decoder_params
from catalog.schema import GPU, Model, QuantFormat
from estimator import constants as k
from estimator.calibration.model import arch_group, compute_capability, die_group, has_int8_dot, power_limited
from estimator.engines import (
    achieved_bandwidth_gbs,
    compute_class,
    compute_tflops,
    decode_coefficients,
    decode_kernel,
    dot4_tops,
    int8_matrix_tops,
    matrix_tflops,
    prefill_coefficients,
    prefill_gemm,
)
from estimator.query import Engine
from estimator.speed import (
    activation_bytes_per_token,
    active_body_params,
    decode_seconds_per_step,
    decode_terms,
    matmul_flops,
    prefill_seconds,
    prefill_seconds_together,
    prefill_terms,
    speed_of,
)

CAT = load_catalog()


def gpu(gid: str) -> GPU:
    return CAT.gpu(gid)


def model(mid: str) -> Model:
    return CAT.model(mid)


def quant(qid: str) -> QuantFormat:
    return CAT.quant(qid)


def decode_parts(m: Model, q: QuantFormat, g: GPU, engine: Engine = "llama.cpp") -> dict[str, float]:
    t = decode_terms(m, q, g, engine, 512, "f16")
    c = decode_coefficients(engine, q, g)
    return {
        "weights": c.inv_weight_efficiency * (t.dense_weights_s + t.expert_weights_s)
        + c.expert_extra * t.expert_weights_s,
        "kv": c.inv_kv_efficiency * t.kv_read_s,
        "dequant": c.dequant_ops_per_weight * t.dequant_op_s,
        "fixed": c.layer_overhead_s * t.layers + c.moe_layer_overhead_s * t.moe_layers + c.token_overhead_s,
    }


def test_compute_capability_from_architecture() -> None:
    assert compute_capability(gpu("nvidia-p100-pcie-16gb")) == 6.0
    assert compute_capability(gpu("nvidia-t4")) == 7.5
    assert compute_capability(gpu("nvidia-h100-sxm")) == 9.0
    assert not has_int8_dot(gpu("nvidia-p100-pcie-16gb"))
    assert has_int8_dot(gpu("nvidia-t4")) and has_int8_dot(gpu("nvidia-rtx-3090"))


def test_mi300x_emulated_dp4a_before_the_cdna_gate() -> None:
    """gfx942 took ggml_cuda_dp4a's C byte loop until llama.cpp#12177 (2025-03-11) gated sdot4 on CDNA."""
    from estimator.calibration.model import EMULATED_DOT4_INSTRUCTIONS, GFX942_DP4A_SINCE

    mi300x, mi100 = gpu("amd-mi300x"), gpu("amd-mi100")
    before = "2024-10-07"
    assert not has_int8_dot(mi300x, before) and has_int8_dot(mi300x, GFX942_DP4A_SINCE) and has_int8_dot(mi300x)
    assert has_int8_dot(mi100, before)  # gfx908 was in the list from the start
    q4 = quant("q4_0")
    assert prefill_gemm(q4, mi300x, date=before) == "mmq"
    assert compute_tflops("llama.cpp", q4, mi300x, "mmq", date=before) == pytest.approx(
        dot4_tops(mi300x) / EMULATED_DOT4_INSTRUCTIONS)
    assert compute_tflops("llama.cpp", q4, mi300x, "mmq", date="2025-05-01") == pytest.approx(dot4_tops(mi300x))


def test_p100_k_quant_decode_is_bound_by_dequantisation() -> None:
    """sm_60 has no dp4a: unpacking Q4_K_M costs more than streaming it."""
    parts = decode_parts(model("qwen3-8b"), quant("q4_k_m"), gpu("nvidia-p100-pcie-16gb"))
    assert parts["dequant"] > parts["weights"]


def test_h100_f16_decode_is_bound_by_bandwidth() -> None:
    parts = decode_parts(model("qwen3-8b"), quant("f16"), gpu("nvidia-h100-sxm"))
    assert parts["dequant"] == 0
    assert parts["weights"] > 0.6 * sum(parts.values())


def test_p100_dequantisation_costs_more_than_on_a_dp4a_card_of_similar_rate() -> None:
    """Per op of ALU throughput, a card without dp4a needs more ops per quantized weight."""
    p100 = decode_coefficients("llama.cpp", quant("q4_k_m"), gpu("nvidia-p100-pcie-16gb"))
    v100 = decode_coefficients("llama.cpp", quant("q4_k_m"), gpu("nvidia-v100-pcie-32gb"))
    assert p100.dequant_ops_per_weight > 2 * v100.dequant_ops_per_weight


def test_moe_decode_sits_between_its_active_and_total_dense_sizes() -> None:
    g, q = gpu("nvidia-rtx-4090"), quant("q4_k_m")
    moe = decode_seconds_per_step(model("qwen3-30b-a3b"), q, g, "llama.cpp", 512, "f16")
    dense3 = decode_seconds_per_step(model("qwen2.5-3b"), q, g, "llama.cpp", 512, "f16")
    dense32 = decode_seconds_per_step(model("qwen3-32b"), q, g, "llama.cpp", 512, "f16")
    assert dense3 < moe < dense32


def test_moe_pays_for_routing() -> None:
    t = decode_terms(model("qwen3-30b-a3b"), quant("q4_k_m"), gpu("nvidia-rtx-4090"), "llama.cpp", 512, "f16")
    assert t.expert_weights_s > 0 and t.moe_layers == model("qwen3-30b-a3b").layers
    dense = decode_terms(model("qwen3-8b"), quant("q4_k_m"), gpu("nvidia-rtx-4090"), "llama.cpp", 512, "f16")
    assert dense.expert_weights_s == 0 and dense.moe_layers == 0


def test_kv_reads_slow_decode_at_depth() -> None:
    g, q, m = gpu("nvidia-rtx-4090"), quant("q4_k_m"), model("qwen3-8b")
    shallow = decode_seconds_per_step(m, q, g, "llama.cpp", 512, "f16")
    deep = decode_seconds_per_step(m, q, g, "llama.cpp", 32768, "f16")
    assert deep > shallow * 1.1


def test_power_limited_cards_are_their_own_group() -> None:
    assert power_limited(gpu("nvidia-t4")) and power_limited(gpu("nvidia-a2"))
    assert not power_limited(gpu("nvidia-rtx-4090"))


def test_achieved_bandwidth_is_the_measured_figure_where_published() -> None:
    g = gpu("amd-mi300x")
    assert g.achieved_bandwidth_gbs is not None and g.achieved_bandwidth_source
    assert achieved_bandwidth_gbs(g) == g.achieved_bandwidth_gbs < g.bandwidth_gbs


def test_servers_pay_a_per_request_cost_llama_bench_does_not() -> None:
    g, q, m = gpu("nvidia-h100-sxm"), quant("bf16"), model("qwen3-8b")
    server = prefill_terms(m, q, g, "vllm", 128)
    bench = prefill_terms(m, q, g, "llama.cpp", 128)
    assert server.request == 1 and bench.request == 0
    assert prefill_seconds(m, q, g, "vllm", 128) >= prefill_coefficients("vllm", q, g).request_overhead_s


def test_llama_cpp_prefill_streams_the_weights_once_per_micro_batch() -> None:
    g, q, m = gpu("nvidia-rtx-4090"), quant("q4_k_m"), model("qwen3-8b")
    one = prefill_terms(m, q, g, "llama.cpp", 512)
    four = prefill_terms(m, q, g, "llama.cpp", 2048)
    assert abs(four.weight_passes_s / one.weight_passes_s - 4) < 1e-9


def test_attention_grows_with_depth() -> None:
    g, q, m = gpu("nvidia-rtx-4090"), quant("q4_k_m"), model("qwen3-8b")
    assert prefill_terms(m, q, g, "llama.cpp", 512, 16384).attention_s > 10 * prefill_terms(
        m, q, g, "llama.cpp", 512, 0).attention_s


def test_every_estimate_carries_a_band_around_it() -> None:
    for gid in ("nvidia-t4", "nvidia-rtx-4090", "apple-m2-ultra-192gb", "amd-mi300x"):
        for mid in ("qwen3-8b", "qwen3-30b-a3b"):
            s = speed_of(model(mid), quant("q4_k_m"), gpu(gid), 1, "llama.cpp", "f16", 2048)
            assert s.decode_tps_low < s.decode_tps < s.decode_tps_high
            assert s.prefill_tps_low < s.prefill_tps < s.prefill_tps_high
            assert s.ttft_s_low < s.ttft_s < s.ttft_s_high


def test_hybrid_linear_prefill_pays_a_step_per_token_per_recurrent_layer() -> None:
    hybrid = model("qwen3.5-35b-a3b")
    dense = model("qwen3-8b")
    g, q = gpu("nvidia-rtx-3090"), quant("q4_k_m")
    assert prefill_terms(hybrid, q, g, "llama.cpp", 512).recurrent_token_layers == 512 * hybrid.recurrent_layers
    assert prefill_terms(dense, q, g, "llama.cpp", 512).recurrent_token_layers == 0
    assert prefill_coefficients("llama.cpp", q, g).recurrent_step_s > 0


def test_short_convolution_layers_run_no_recurrent_scan() -> None:
    """LFM2's 10 gated short-convolution layers keep a state but update it with one small convolution; Qwen3.5's
    Gated DeltaNet layers run a scan each token."""
    lfm, qwen = model("lfm2.5-1.2b"), model("qwen3.5-35b-a3b")
    g, q = gpu("nvidia-rtx-4090"), quant("q4_k_m")
    assert lfm.recurrent_layers == 10 and lfm.scan_layers == 0
    assert qwen.scan_layers == qwen.recurrent_layers > 0
    assert decode_terms(lfm, q, g, "llama.cpp", 512, "f16").recurrent_layers == 0
    assert decode_terms(qwen, q, g, "llama.cpp", 512, "f16").recurrent_layers == qwen.recurrent_layers
    assert prefill_terms(lfm, q, g, "llama.cpp", 512).recurrent_token_layers == 0


def test_single_op_blocks_pay_half_a_layer_of_fixed_work() -> None:
    """Nemotron-H's 52 blocks are each a Mamba-2, attention or MoE block, where a Llama or Qwen3.5 layer is a mixer
    and an MLP: its per-layer launches and norms come to 26 layers' worth, in decode and in every prefill pass."""
    nemotron, qwen = model("nemotron-3-nano-30b-a3b"), model("qwen3.5-35b-a3b")
    g, q = gpu("nvidia-rtx-4090"), quant("q4_k_m")
    assert nemotron.layer_equivalents == 26
    assert qwen.layer_equivalents == qwen.layers == 40
    # Its MoE blocks also run an always-on shared expert: 23 of 52 blocks, 5 kernels each against a Llama layer's 19.
    with_shared = 26 * (1 + 5 * 23 / 52 / 19)
    assert decode_terms(nemotron, q, g, "llama.cpp", 512, "f16").layers == pytest.approx(with_shared)
    one_pass = prefill_terms(nemotron, q, g, "llama.cpp", 512, ubatch=512)
    assert one_pass.layer_passes == pytest.approx(with_shared)
    assert decode_terms(model("llama-3.1-8b"), q, g, "llama.cpp", 512, "f16").layers == 32


def test_layers_are_weighed_by_the_kernels_their_graph_launches() -> None:
    """llama.cpp's Llama layer is 19 graph nodes; query/key norms add 4, post-attention and post-MLP norms 4, Gemma's
    per-layer input path 7, an MoE layer's shared MLP 5 (and Gemma 4's norms around its two MLP branches 6)."""
    g, q = gpu("nvidia-rtx-4090"), quant("q4_k_m")

    def layers(model_id: str) -> float:
        return decode_terms(model(model_id), q, g, "llama.cpp", 512, "f16").layers

    assert layers("llama-3.1-8b") == 32
    assert layers("qwen3-8b") == pytest.approx(36 * 23 / 19)
    assert layers("gemma-2-9b") == pytest.approx(42 * 23 / 19)
    assert layers("gemma-4-31b") == pytest.approx(60 * 27 / 19)
    assert layers("gemma-4-e4b") == pytest.approx(42 * 34 / 19)
    assert layers("gemma-4-26b-a4b") == pytest.approx(30 * 38 / 19)
    hybrid = model("qwen3.5-9b")  # query/key norms only in its full-attention layers
    share = (hybrid.attention.global_layers or 0) / hybrid.layers
    assert 0 < share < 1
    assert layers("qwen3.5-9b") == pytest.approx(hybrid.layers * (1 + 4 * share / 19))
    # The per-layer cost they pay is the fitted per-layer coefficient times these counts: more kernels, slower.
    e4b = model("gemma-4-e4b")
    plain = e4b.model_copy(update={"layer_graph": None})
    assert decode_seconds_per_step(e4b, q, g, "llama.cpp", 512, "f16") > \
        decode_seconds_per_step(plain, q, g, "llama.cpp", 512, "f16")


def test_quantized_prefill_unpacks_weight_tiles_and_f16_does_not() -> None:
    m, g = model("qwen3-8b"), gpu("nvidia-rtx-4090")
    assert prefill_terms(m, quant("q4_k_m"), g, "llama.cpp", 512).tile_dequant_s > 0
    assert prefill_terms(m, quant("f16"), g, "llama.cpp", 512).tile_dequant_s == 0


def test_llama_cpp_prefill_kernel_follows_the_build_that_ran_it() -> None:
    """Volta and the P100 have no int8 MMQ path worth taking; RDNA 3/4 moved from hipBLAS to WMMA MMQ in late 2025."""
    q4 = quant("q4_k_m")
    assert prefill_gemm(q4, gpu("nvidia-rtx-4090")) == "mmq"
    assert prefill_gemm(q4, gpu("nvidia-rtx-4090"), date="2024-03-01") == "blas"
    assert prefill_gemm(q4, gpu("nvidia-tesla-p40")) == "mmq"
    assert prefill_gemm(q4, gpu("nvidia-p100-pcie-16gb")) == "blas"
    assert prefill_gemm(q4, gpu("nvidia-v100-pcie-16gb")) == "blas"
    r9700 = gpu("amd-radeon-ai-pro-r9700")
    assert prefill_gemm(q4, r9700, date="2025-09-28") == "blas"
    assert prefill_gemm(q4, r9700, date="2025-12-27") == "mmq"
    assert prefill_gemm(quant("f16"), r9700) == "blas"
    xtx = gpu("amd-rx-7900-xtx")
    assert prefill_gemm(quant("q6_k"), xtx) == "blas"  # large batches of Q6_K went back to hipBLAS on RDNA 3
    assert prefill_gemm(quant("q6_k"), xtx, ubatch=64) == "mmq"
    assert prefill_gemm(quant("q4_0"), gpu("apple-m2-ultra-192gb")) == "native"


def test_gcn_and_cdna_ran_mmq_at_every_batch_until_ggml_named_their_gfx_ids() -> None:
    """Before llama.cpp#11244 an AMD compute capability was 100·major + 10·minor and matched no gfx id, so only RDNA 3
    avoided MMQ; #11244 sent gfx906/gfx908 to hipBLAS, #11601 every GCN and CDNA chip, until MMQ came back."""
    q4 = quant("q4_0")
    mi300x, mi100, mi50 = gpu("amd-mi300x"), gpu("amd-mi100"), gpu("amd-mi50-32gb")
    for g in (mi300x, mi100, mi50):
        assert prefill_gemm(q4, g, date="2024-10-07") == "mmq", g.id
        assert prefill_gemm(q4, g, date="2025-02-05") == "blas", g.id
    assert prefill_gemm(q4, mi100, date="2025-01-29") == "blas"  # gfx908: named by #11244
    assert prefill_gemm(q4, mi300x, date="2025-01-29") == "mmq"  # gfx942: not until #11601
    assert prefill_gemm(q4, mi50, date="2025-03-01") == "mmq"
    assert prefill_gemm(q4, mi300x, date="2025-08-01") == "mmq"
    assert prefill_gemm(q4, gpu("amd-rx-7900-xtx"), date="2023-11-01") == "mmq"  # before llama.cpp#4697
    assert prefill_gemm(q4, gpu("amd-rx-7900-xtx"), date="2024-03-01") == "blas"
    assert prefill_gemm(q4, gpu("nvidia-rtx-4090"), date="2023-09-15") == "mmq"  # before llama.cpp#3776


def test_cdna_mmq_before_matrix_core_mmq_runs_at_the_dot_product_rate() -> None:
    """MI300X: 304 CUs × 64 lanes × 2.1 GHz × 8 ops of one v_dot4 = 327 TOPS, an eighth of its MFMA int8 rate
    (from llama.cpp#12177, when ggml_cuda_dp4a first issued v_dot4 on gfx942, until MFMA MMQ)."""
    q4, mi300x = quant("q4_0"), gpu("amd-mi300x")
    assert abs(compute_tflops("llama.cpp", q4, mi300x, "mmq", date="2025-05-01") - 327) < 2
    assert compute_tflops("llama.cpp", q4, mi300x, "mmq", date="2025-08-01") == mi300x.int8_tops
    assert compute_tflops("llama.cpp", q4, mi300x, "mmq") == mi300x.int8_tops
    for gid in ("amd-rx-6800-xt", "amd-rx-6900-xt"):  # RDNA 2's listed int8 rate is its dot-product rate
        g = gpu(gid)
        assert g.int8_tops is not None and abs(dot4_tops(g) - g.int8_tops) < 0.5, gid


def test_a_quantized_matmul_sent_to_blas_streams_an_f16_copy_and_runs_at_the_f16_rate() -> None:
    m, q, g = model("qwen3-8b"), quant("q4_k_m"), gpu("amd-radeon-ai-pro-r9700")
    old = prefill_terms(m, q, g, "llama.cpp", 512, date="2025-09-28")
    new = prefill_terms(m, q, g, "llama.cpp", 512, date="2025-12-27")
    assert old.tile_dequant_s == 0 < new.tile_dequant_s
    # quantized bytes plus an F16 write and read of every matrix weight: several times the quantized bytes
    assert old.weight_passes_s > 3 * new.weight_passes_s
    assert compute_class("llama.cpp", q, g, "blas") == "fp16" and compute_class("llama.cpp", q, g, "mmq") == "int8"
    assert compute_tflops("llama.cpp", q, g, "blas") == g.fp16_tflops


def test_every_expert_is_unpacked_once_per_micro_batch_however_few_tokens_it_gets() -> None:
    """Qwen3-30B-A3B: 512 tokens × 8 of 128 experts = 32 tokens per expert, under one 128-token tile."""
    from estimator.speed import unpacked_weight_tiles

    moe, dense = model("qwen3-30b-a3b"), model("qwen3-8b")
    shared, experts = unpacked_weight_tiles(moe, 512, 512)
    all_expert_params = moe.params_b * 1e9 - shared / (512 / 128)  # roughly: what is not shared is experts
    assert experts > 0.9 * all_expert_params
    _, twice = unpacked_weight_tiles(moe, 1024, 512)
    assert abs(twice / experts - 2) < 1e-9  # once per pass
    d_shared, d_experts = unpacked_weight_tiles(dense, 512, 512)
    assert d_experts == 0 and abs(d_shared / unpacked_weight_tiles(dense, 1024, 512)[0] - 0.5) < 1e-9


def test_an_expert_with_few_tokens_keeps_mmq_where_the_shared_matrices_go_to_blas() -> None:
    q, r9700 = quant("q4_k_m"), gpu("amd-radeon-ai-pro-r9700")
    assert prefill_gemm(q, r9700, date="2025-09-28", ubatch=512) == "blas"
    assert prefill_gemm(q, r9700, date="2025-09-28", ubatch=32) == "mmq"
    m = model("qwen3-30b-a3b")
    old = prefill_terms(m, q, r9700, "llama.cpp", 512, date="2025-09-28")
    assert old.tile_dequant_s > 0  # the experts' MMQ tiles, though the shared matrices went to BLAS


def test_a_board_with_few_watts_for_its_flops_prefills_below_its_datasheet_share() -> None:
    """T4 (70 W for 65 TFLOPS) cannot hold its clock under a matrix load; the RTX 2080 Ti (250 W) can."""
    q = quant("q4_k_m")
    t4 = prefill_coefficients("llama.cpp", q, gpu("nvidia-t4")).inv_matmul_utilisation
    ti = prefill_coefficients("llama.cpp", q, gpu("nvidia-rtx-2080-ti")).inv_matmul_utilisation
    assert t4 > ti


def test_gp100_is_its_own_die_within_pascal() -> None:
    p100, p40 = gpu("nvidia-p100-pcie-16gb"), gpu("nvidia-tesla-p40")
    assert arch_group(p100) == arch_group(p40)
    assert die_group(p100) != die_group(p40)
    assert die_group(gpu("nvidia-h100-sxm")) == arch_group(gpu("nvidia-h100-sxm"))


def test_mmq_without_int8_matrix_units_runs_at_the_byte_dot_product_rate() -> None:
    """MI50 (gfx906's v_dot4_i32_i8) and V100 (dp4a) list no int8 rate: MMQ runs at 8 ops per lane per clock, twice
    the MI50's packed FP16 rate (60 CUs × 64 lanes × 1.725 GHz × 8 = 53 TOPS), not at the FP16 rate. The P100 (no
    dp4a) and RDNA 3.5's WMMA (int8 at its FP16 rate) keep the FP16 figure."""
    q4 = quant("q4_0")
    mi50, v100 = gpu("amd-mi50-32gb"), gpu("nvidia-v100-pcie-16gb")
    assert abs(compute_tflops("llama.cpp", q4, mi50, "mmq") - 53) < 1
    assert abs(compute_tflops("llama.cpp", q4, v100, "mmq") - 8 * v100.fp32_tflops / 2) < 2
    for gid in ("nvidia-p100-pcie-16gb", "amd-radeon-8060s-128gb"):
        g = gpu(gid)
        assert compute_tflops("llama.cpp", q4, g, "mmq") == g.fp16_tflops, gid


def test_no_prefill_gemm_beats_the_vendors_peak() -> None:
    """The GEMM's peak-FLOPS seconds carry a floor of 1 wherever the peak is a vendor figure; Apple's estimated
    peak (cores × clock, a lower bound) carries none."""
    cat = load_catalog()
    engines: tuple[Engine, ...] = ("llama.cpp", "vllm", "ollama", "sglang", "exllamav2", "mlx")
    for g in cat.gpus:
        for engine in engines:
            for fmt in (quant("q4_k_m"), quant("f16")):
                c = prefill_coefficients(engine, fmt, g)
                if g.vendor != "apple" or g.fp32_tflops:
                    assert c.inv_matmul_utilisation > 1.0, (g.id, engine, fmt.id)


def test_quantized_prefill_on_pascal_runs_at_the_dp4a_rate() -> None:
    """The P40 has no tensor cores and no fast FP16, but dp4a gives MMQ four int8 products per lane."""
    p40 = gpu("nvidia-tesla-p40")
    assert compute_tflops("llama.cpp", quant("q4_0"), p40) == p40.int8_tops
    assert compute_tflops("llama.cpp", quant("f16"), p40) == p40.fp32_tflops


def test_an_estimate_is_for_current_builds() -> None:
    """Old rows carry a build age with a fitted slope per backend; an estimate's age is zero."""
    from estimator.engines import covariates

    assert "build_age" not in covariates(gpu("amd-rx-7900-xtx"))


def test_apple_gpu_throughput_follows_its_core_count() -> None:
    """M1 Max: 32 cores × 128 ALUs × 2 FLOPs × 1.296 GHz = 10.6 TFLOPS (metal-benchmarks' table)."""
    from estimator.engines import apple_tflops

    assert abs(apple_tflops(gpu("apple-m1-max-64gb")) - 10.62) < 0.01
    assert apple_tflops(gpu("apple-m3-max-64gb")) > apple_tflops(gpu("apple-m3-max-36gb"))


def test_attention_runs_at_the_fp16_rate_whatever_the_weight_format() -> None:
    """Flash attention multiplies fp16 queries and keys: its time does not depend on the weights' int8 kernels."""
    m, g = model("qwen3-8b"), gpu("nvidia-rtx-4090")
    q4 = prefill_terms(m, quant("q4_k_m"), g, "llama.cpp", 512, 8192).attention_s
    f16 = prefill_terms(m, quant("f16"), g, "llama.cpp", 512, 8192).attention_s
    assert q4 == f16 > 0


def test_apple_chips_of_one_generation_share_a_die_group() -> None:
    assert die_group(gpu("apple-m1-8gb")) == die_group(gpu("apple-m1-max-64gb")) != die_group(gpu("apple-m3-max-64gb"))


def test_m5_neural_accelerators_speed_up_prefill_matmuls_not_attention() -> None:
    """Apple quotes over 4x the M4's peak GPU compute for AI on the M5's same 10 cores: the matrix multiplies
    get it, attention and dequantisation stay on the ALUs."""
    from estimator.engines import alu_ops_per_s, apple_tflops, attention_tflops

    m4, m5 = gpu("apple-m4-16gb"), gpu("apple-m5-16gb")
    assert apple_tflops(m4) == apple_tflops(m5)
    assert compute_tflops("llama.cpp", quant("q4_0"), m5) == 4 * compute_tflops("llama.cpp", quant("q4_0"), m4)
    assert compute_tflops("mlx", quant("mlx-4bit"), m5) == 4 * compute_tflops("mlx", quant("mlx-4bit"), m4)
    assert attention_tflops(m5) == attention_tflops(m4)
    assert alu_ops_per_s(m5) == alu_ops_per_s(m4)


def test_deep_prompts_stream_each_cached_head_once_per_tile_of_its_query_columns() -> None:
    """At 32k of cached context every tile of (query token, head) columns reads its KV head's whole cache: the term
    grows with the depth and follows the query heads, not the cached ones. Qwen3-8B caches 8 heads a layer where
    Llama 2 7B caches 32, but each is read by 4 query heads, so per layer both read the same."""
    g = gpu("amd-radeon-ai-pro-r9700")
    mha, gqa = model("llama-2-7b"), model("qwen3-8b")

    def reread(m: Model, depth: int) -> float:
        t = prefill_terms(m, quant("q4_0"), g, "llama.cpp", 2048, depth)
        return t.kv_reread_s + t.vector_kv_reread_s

    assert reread(mha, 32768) > 15 * reread(mha, 0) > 0
    assert (mha.attention_heads, mha.kv_heads, gqa.attention_heads, gqa.kv_heads) == (32, 32, 32, 8)
    assert reread(gqa, 32768) / reread(mha, 32768) == pytest.approx(gqa.layers / mha.layers, rel=1e-6)


def test_every_query_head_reads_the_cached_head_of_its_group() -> None:
    """A cached head is read by each query head of its group: Llama 2 7B's 32 KV heads once each, Qwen3-8B's 8 by 4
    heads each, DeepSeek-V2-Lite's one latent by all 16 heads; Gemma 4 26B's global layers (the only ones that grow
    past the 1,024-token window) share each of their 2 cached heads among 8 of the 16 query heads."""
    from estimator.memory import kv_bytes_read_per_query_head_pass, kv_cache_bytes

    for name, group in (("llama-2-7b", 1), ("qwen3-8b", 4), ("deepseek-v2-lite", 16)):
        m = model(name)
        assert kv_bytes_read_per_query_head_pass(m, 4096) == pytest.approx(group * kv_cache_bytes(m, 4096)), name
    gemma = model("gemma-4-26b-a4b")
    grown = kv_bytes_read_per_query_head_pass(gemma, 65536) - kv_bytes_read_per_query_head_pass(gemma, 32768)
    assert grown == pytest.approx(8 * (kv_cache_bytes(gemma, 65536) - kv_cache_bytes(gemma, 32768)))


def test_cuda_sliding_layers_walk_the_micro_batch_as_well_as_their_window() -> None:
    """gpt-oss-20b's 12 sliding layers keep 128 tokens. A prompt's query there is scored against its window plus, on
    average, half the micro-batch on CUDA and HIP (the kernels skip only the masked tail of the cache view) and against
    the window alone on Metal (fully masked blocks skipped); the 12 full layers cost the same either way."""
    from estimator.speed import attention_score_split

    m = model("gpt-oss-20b")
    whole, local = attention_score_split(m, 4096, window_view_batch=1024)
    assert local == pytest.approx(12 * 64 * 4096 * (128 + 512))
    assert whole == attention_score_split(m, 4096)[0]
    assert attention_score_split(m, 4096)[1] == pytest.approx(12 * 64 * 4096 * 128)

    def attention(g: GPU, ubatch: int) -> float:
        return prefill_terms(m, quant("mxfp4"), g, "llama.cpp", 4096, ubatch=ubatch).attention_s

    cuda, metal = gpu("nvidia-rtx-4090"), gpu("apple-m4-max-128gb")
    assert attention(cuda, 4096) > 1.5 * attention(cuda, 1024)
    assert attention(metal, 4096) == pytest.approx(attention(metal, 1024))
    reads = [prefill_terms(m, quant("mxfp4"), cuda, "llama.cpp", 4096, 8192, ubatch=u).kv_reread_s for u in (512, 4096)]
    assert reads[1] > reads[0]


def test_the_vector_tile_kernel_rereads_the_cache_under_its_own_coefficient() -> None:
    """RDNA 4's matrix-core flash attention takes grouped-query models only: Llama 2 7B (one KV head per query head)
    runs the vector tile kernel, whose cache rereads are fitted apart from the matrix kernels'."""
    g = gpu("amd-radeon-ai-pro-r9700")
    vector = prefill_terms(model("llama-2-7b"), quant("q4_0"), g, "llama.cpp", 2048, 32768)
    matrix = prefill_terms(model("qwen3-8b"), quant("q4_0"), g, "llama.cpp", 2048, 32768)
    assert vector.vector_kv_reread_s > 0 == vector.kv_reread_s
    assert matrix.kv_reread_s > 0 == matrix.vector_kv_reread_s


def test_prompt_attention_runs_on_matrix_units_only_where_the_build_had_a_kernel_for_them() -> None:
    from estimator.engines import prefill_attention_kernel

    gqa, mha, wide = model("qwen3-8b"), model("llama-2-7b"), model("qwen3.6-35b-a3b")
    r9700, strix = gpu("amd-radeon-ai-pro-r9700"), gpu("amd-radeon-8060s-128gb")
    assert prefill_attention_kernel("llama.cpp", gpu("nvidia-tesla-p40"), gqa) == "vector"
    assert prefill_attention_kernel("llama.cpp", gpu("nvidia-v100-pcie-16gb"), gqa) == "matrix"
    assert prefill_attention_kernel("llama.cpp", gpu("apple-m2-ultra-192gb"), mha) == "matrix"
    assert prefill_attention_kernel("vllm", gpu("nvidia-tesla-p40"), gqa) == "matrix"
    # RDNA 4 gained a matrix-core kernel in January 2026, for grouped-query heads of up to 128 dimensions
    assert prefill_attention_kernel("llama.cpp", r9700, gqa, date="2025-12-27") == "vector"
    assert prefill_attention_kernel("llama.cpp", r9700, gqa, date="2026-02-01") == "matrix"
    assert prefill_attention_kernel("llama.cpp", r9700, mha, date="2026-02-01") == "vector"
    assert prefill_attention_kernel("llama.cpp", r9700, wide) == "vector"
    # RDNA 3 (and 3.5) only in May 2026, unless the build had rocWMMA (March 2025 to July 2026)
    assert prefill_attention_kernel("llama.cpp", strix, gqa, date="2026-02-01") == "vector"
    assert prefill_attention_kernel("llama.cpp", strix, gqa, date="2025-09-28", rocwmma=True) == "matrix"
    assert prefill_attention_kernel("llama.cpp", strix, mha, date="2025-09-28", rocwmma=True) == "matrix"
    assert prefill_attention_kernel("llama.cpp", strix, mha, date="2026-08-01", rocwmma=True) == "vector"
    assert prefill_attention_kernel("llama.cpp", strix, gqa) == "matrix"
    assert prefill_attention_kernel("llama.cpp", gpu("amd-mi300x"), mha, date="2026-01-01") == "vector"
    assert prefill_attention_kernel("llama.cpp", gpu("amd-mi300x"), mha, date="2026-03-01") == "matrix"
    # A PR branch that ran the MFMA kernel before the merge says so; the flag means nothing outside CUDA/HIP llama.cpp
    assert prefill_attention_kernel("llama.cpp", gpu("amd-mi300x"), mha, date="2026-02-22", fa_matrix=True) == "matrix"
    assert prefill_attention_kernel("llama.cpp", gpu("amd-mi300x"), mha, date="2026-03-01", fa_matrix=False) == "vector"
    assert prefill_attention_kernel("vllm", gpu("amd-mi300x"), mha, fa_matrix=False) == "matrix"


def test_tile_kernel_attention_is_referred_to_the_vector_rate_and_unfused_attention_to_the_matrix_rate() -> None:
    m, q, r9700 = model("qwen3-8b"), quant("q4_k_m"), gpu("amd-radeon-ai-pro-r9700")
    tile = prefill_terms(m, q, r9700, "llama.cpp", 512, 16384, date="2025-12-27")
    mma = prefill_terms(m, q, r9700, "llama.cpp", 512, 16384, date="2026-02-01")
    unfused = prefill_terms(m, q, r9700, "llama.cpp", 512, 16384, date="2025-12-27", flash_attn=False)
    assert tile.attention_s == 0 < tile.vector_attention_s
    assert mma.vector_attention_s == 0 < mma.attention_s
    # The same matrix rate; unfused, the micro-batch's masked corner is computed too.
    assert unfused.vector_attention_s == 0
    assert unfused.attention_s == pytest.approx(mma.attention_s * (16384 + 256 + 256) / (16384 + 256), rel=1e-6)
    # the same FLOPs at a quarter of the rate: packed FP16 lanes reach the 47.8 TFLOPS FP32 figure (which already
    # counts RDNA 4's dual issue), against 191.4 matrix TFLOPS
    assert 3.9 < tile.vector_attention_s / mma.attention_s < 4.1
    from estimator.engines import alu_ops_per_s, attention_tflops

    # RDNA 3's 61.4 TFLOPS counts two FP32 operations per lane per clock, RDNA 2's 16.2 one
    xtx, rx6800 = gpu("amd-rx-7900-xtx"), gpu("amd-rx-6800")
    assert alu_ops_per_s(xtx) == xtx.fp32_tflops * 1e12 / 4
    assert alu_ops_per_s(rx6800) == rx6800.fp32_tflops * 1e12 / 2
    assert attention_tflops(xtx, "vector") == xtx.fp32_tflops
    assert attention_tflops(rx6800, "vector") == 2 * rx6800.fp32_tflops

    # the P100 computes the tile kernel in half2, the P40 (sm_61, FP16 at 1/64) in FP32
    p100, p40 = gpu("nvidia-p100-pcie-16gb"), gpu("nvidia-tesla-p40")
    assert attention_tflops(p100, "vector") == 2 * p100.fp32_tflops
    assert attention_tflops(p40, "vector") == p40.fp32_tflops


def test_a_row_whose_file_weighs_more_than_the_catalog_format_is_fitted_on_its_own_bytes() -> None:
    from dataclasses import replace

    from estimator.calibration.fit import row_quant
    from estimator.calibration.measurements import Row
    from estimator.memory import weight_bytes

    m, q = model("qwen3-8b"), quant("ud-q4_k_xl")
    base = Row(kind="decode", gpu=gpu("nvidia-rtx-4090"), gpus=1, model=m, quant=q, tokens=128, depth=0,
               measured_tps=100.0, source="test", holdout=False)
    catalog_gib = weight_bytes(m, q) / 2**30
    heavier = replace(base, file_gib=catalog_gib * 1.15)
    assert abs(weight_bytes(m, row_quant(heavier)) / 2**30 / heavier.file_gib - 1) < 0.01
    assert row_quant(replace(base, file_gib=catalog_gib * 1.01)) is q  # the same file, within rounding
    assert row_quant(replace(base, file_gib=catalog_gib * 2)) is q  # a different file: the name is wrong, not the bits
    assert row_quant(base) is q


def test_experts_split_between_mmq_and_blas_by_the_tokens_each_one_is_routed() -> None:
    """gpt-oss-20b: 512 tokens × 4 of 32 experts = 64 per expert on average, the count at which a 2025 RDNA
    build stopped keeping MMQ: about half the experts (those routed 64 or more) go to BLAS."""
    from estimator.speed import expert_blas_shares

    q, strix = quant("mxfp4"), gpu("amd-radeon-8060s-128gb")
    experts, tokens = expert_blas_shares(q, strix, "2025-09-28", 64, 32)
    assert 0.4 < experts < 0.6 and tokens > experts  # the busier experts carry more of the tokens
    assert expert_blas_shares(q, strix, "2025-09-28", 16, 128)[0] < 1e-6  # 16 per expert: all MMQ
    assert expert_blas_shares(q, strix, "2026-02-01", 64, 32) == (0.0, 0.0)  # WMMA MMQ takes every batch
    m = model("gpt-oss-20b")
    old = prefill_terms(m, q, strix, "llama.cpp", 512, date="2025-09-28")
    new = prefill_terms(m, q, strix, "llama.cpp", 512, date="2026-02-01")
    assert new.tile_dequant_s > old.tile_dequant_s > 0 and old.weight_passes_s > new.weight_passes_s


def test_llama_cpp_decode_ran_without_cuda_graphs_below_ampere_until_mid_2026_and_never_on_pascal() -> None:
    from estimator.calibration.model import cuda_graphs_off

    t4, p40, rtx4090 = gpu("nvidia-t4"), gpu("nvidia-tesla-p40"), gpu("nvidia-rtx-4090")
    assert cuda_graphs_off("llama.cpp", t4, "2025-04-05") and cuda_graphs_off("ollama", t4, "2026-03-01")
    assert not cuda_graphs_off("llama.cpp", t4, "2026-08-01") and not cuda_graphs_off("llama.cpp", t4, "")
    assert cuda_graphs_off("llama.cpp", p40, "") and not cuda_graphs_off("llama.cpp", rtx4090, "2025-01-01")
    assert not cuda_graphs_off("vllm", p40, "") and not cuda_graphs_off("llama.cpp", gpu("amd-rx-7900-xtx"), "")


def test_ollama_runs_are_its_own_runners_before_v0_30_and_llama_server_after() -> None:
    """ollama/ollama#16031 (v0.30.0, 2026-06-01) replaced Ollama's runners with upstream llama-server. A stated version
    decides; an unversioned run goes by its date; an estimate is for a current build."""
    from estimator.calibration.model import engine_group, ollama_runs_llama_server, situation_groups

    assert not ollama_runs_llama_server("2025-09-14", "") and ollama_runs_llama_server("2026-06-01", "")
    assert ollama_runs_llama_server("2026-05-31", "0.30.0") and ollama_runs_llama_server("", "")
    assert not ollama_runs_llama_server("2026-10-01", "0.9.2") and ollama_runs_llama_server("2025-01-01", "v0.32.13")
    assert not ollama_runs_llama_server("2026-08-01", "0.21.0")
    assert engine_group("ollama", "2025-09-14") == "ollama-runner" and engine_group("ollama") == "llama.cpp"
    assert engine_group("lm studio", "2024-01-01") == "lm studio" and engine_group("vllm") == "vllm"
    t4, k_quant = gpu("nvidia-t4"), "llama.cpp/k"
    assert situation_groups("ollama", t4, k_quant, "mmq", date="2025-04-01")["engine"] == "ollama-runner"
    assert situation_groups("ollama", t4, k_quant, "mmq", date="2025-04-01", build="0.30.2")["engine"] == "llama.cpp"


def test_gemma4_global_layers_score_at_their_own_head_width() -> None:
    from estimator.speed import attention_flops, attention_score_split

    m = model("gemma-4-31b")
    whole, local = attention_score_split(m, 2048, 30000)
    assert whole == 10 * 32 * 2048 * (30000 + 1024) and local == 50 * 32 * 2048 * 1024
    assert attention_flops(m, 2048, 30000) == 4 * 512 * whole + 4 * 256 * local


def test_llama_cpp_scores_mla_over_the_whole_latent_once_it_runs_absorbed() -> None:
    """DeepSeek-V2-Lite: decompressed, a head scores over 128 + 64 key dims and weighs 128-wide values; llama.cpp
    runs MLA absorbed since #12801 (2025-04-15), prompt batches included: 576-wide keys, 512-wide values."""
    from estimator.engines import mla_absorbed
    from estimator.speed import attention_flops, flops_per_score

    m = model("deepseek-v2-lite")
    assert flops_per_score(m) == 2 * (128 + 64) + 2 * 128
    assert flops_per_score(m, mla_absorbed=True) == 2 * (512 + 64) + 2 * 512
    assert mla_absorbed("llama.cpp") and mla_absorbed("ollama", "2025-06-01")
    assert not mla_absorbed("llama.cpp", "2025-04-14") and not mla_absorbed("vllm") and not mla_absorbed("sglang")
    absorbed = attention_flops(m, 512, 32768, mla_absorbed=True)
    assert absorbed / attention_flops(m, 512, 32768) == pytest.approx(2176 / 640)
    v100, q = gpu("nvidia-v100-pcie-32gb"), quant("q4_0")
    before = prefill_terms(m, q, v100, "llama.cpp", 512, 32768, date="2025-03-01").attention_s
    after = prefill_terms(m, q, v100, "llama.cpp", 512, 32768, date="2025-11-25").attention_s
    assert after / before == pytest.approx(2176 / 640)
    # A dense model has no latent: the flag changes nothing.
    dense = model("qwen3-8b")
    assert flops_per_score(dense, mla_absorbed=True) == flops_per_score(dense) == 4 * dense.head_dim


def test_decode_weight_efficiency_has_a_group_per_kernel_on_each_die() -> None:
    """Cards of one die running one decode kernel share a group; the same kernel on another die (an HBM part of
    the same architecture) or another kernel on the same die does not."""
    from estimator.calibration.model import DECODE_PARAMS, situation_groups

    def group(engine: Engine, gpu_id: str, kernel: str) -> str:
        return situation_groups(engine, gpu(gpu_id), kernel, "mmq")["kernel_die"]

    assert group("llama.cpp", "nvidia-rtx-3090", "k") == group("ollama", "nvidia-rtx-3080-10gb", "k")
    assert group("llama.cpp", "nvidia-rtx-3090", "k") != group("llama.cpp", "nvidia-a100-80gb-sxm", "k")
    assert group("llama.cpp", "nvidia-rtx-3090", "k") != group("llama.cpp", "nvidia-rtx-3090", "q4_0")
    assert group("llama.cpp", "nvidia-rtx-3090", "f16") != group("vllm", "nvidia-rtx-3090", "f16")
    weights = next(p for p in DECODE_PARAMS if p.name == "inv_weight_efficiency")
    assert "kernel_die" in weights.levels


def test_a_build_without_cuda_graphs_is_its_own_graphs_group() -> None:
    """GGML_CUDA_GRAPHS=OFF on an Ampere card is a flag of that build, not the sub-Ampere default, and not a
    server run eagerly; a Pascal card never uses graphs whatever the build says."""
    from estimator.calibration.model import situation_groups

    a30, p40 = gpu("nvidia-a30"), gpu("nvidia-tesla-p40")
    assert situation_groups("llama.cpp", a30, "q", "mmq", date="2025-12-03", cuda_graphs=False)["graphs"] == "built-off"
    assert situation_groups("vllm", a30, "q", "fp16", cuda_graphs=False)["graphs"] == "eager"
    assert situation_groups("llama.cpp", p40, "q", "mmq", date="2025-12-03", cuda_graphs=False)["graphs"] == "off"
    assert situation_groups("llama.cpp", a30, "q", "mmq", date="2025-12-03")["graphs"] == "default"


def test_a_server_step_is_launched_apart_from_llama_cpp_on_the_same_backend() -> None:
    """vLLM and SGLang replay a decode step as one captured graph of their own kernels; llama.cpp's ROCm build launches
    each kernel from the host. The per-layer cost groups them apart on one backend (an MI300X's SGLang rows are not
    priced at llama.cpp's ROCm launch cost), while their weight streams still share the backend's offsets."""
    from estimator.calibration.model import DECODE_PARAMS, situation_groups

    mi300x, h100 = gpu("amd-mi300x"), gpu("nvidia-h100-sxm")
    llama_rocm = situation_groups("llama.cpp", mi300x, "k", "mmq")
    sglang_rocm = situation_groups("sglang", mi300x, "f16", "fp16")
    assert llama_rocm["launch"] == "rocm" == situation_groups("ollama", mi300x, "k", "mmq")["launch"]
    assert sglang_rocm["launch"] == "server@rocm" == situation_groups("vllm", mi300x, "f16", "fp16")["launch"]
    assert situation_groups("sglang", h100, "f16", "fp16")["launch"] == "server@cuda"
    assert llama_rocm["backend"] == sglang_rocm["backend"] == "rocm"
    levels = {p.name: p.levels for p in DECODE_PARAMS}
    assert "launch" in levels["layer_overhead_s"] and "backend" not in levels["layer_overhead_s"]
    assert "backend" in levels["inv_weight_efficiency"]


def test_decode_streams_a_per_class_format_at_the_bits_of_what_it_reads() -> None:
    """UD-Q3_K_XL keeps attention and shared tensors heavier than the routed experts: a MoE step reads its
    experts at their own bits, not at the dense FFN's."""
    from estimator.memory import active_weight_bits
    from estimator.speed import streamed_weight_bytes

    m, q = model("qwen3-30b-a3b"), quant("ud-q3_k_xl")
    dense_bits, routed_bits = active_weight_bits(m, q)
    assert dense_bits != routed_bits
    flat = q.model_copy(update={"tensor_bits": None})
    assert streamed_weight_bytes(m, q) != streamed_weight_bytes(m, flat)


def test_the_matrix_kernel_choice_changes_only_at_the_stated_batch_edges() -> None:
    """The expert split asks prefill_gemm once per interval between PREFILL_GEMM_BATCH_EDGES."""
    from estimator.engines import PREFILL_GEMM_BATCH_EDGES

    edges = (1, *PREFILL_GEMM_BATCH_EDGES, 10_000)
    gpus = [g for g in CAT.gpus if g.vendor in ("nvidia", "amd")]
    formats = [q for q in CAT.quants if "llama.cpp" in q.engines]
    for g in gpus:
        for q in formats:
            for date in ("2024-01-01", "2025-09-28", "2025-12-20", "2026-02-01", ""):
                for experts in (0, 128):
                    for lo, hi in pairwise(edges):
                        first = prefill_gemm(q, g, date=date, ubatch=lo, experts=experts)
                        for n in (lo + 1, (lo + hi) // 2, hi - 1):
                            assert prefill_gemm(q, g, date=date, ubatch=n, experts=experts) == first, (g.id, q.id, n)


def test_moe_prefill_pays_one_matmul_per_expert_only_where_mul_mat_id_falls_back() -> None:
    moe, q, r9700 = model("qwen3-30b-a3b"), quant("q4_k_m"), gpu("amd-radeon-ai-pro-r9700")
    # Before RDNA 4's WMMA-MMQ kernels (2025-11-24) a 512-token batch is declined by MMQ as a whole: every expert
    # (mean 32 tokens each, so all 128 get some) runs its gate, up and down matmuls alone, in each MoE layer.
    old = prefill_terms(moe, q, r9700, "llama.cpp", 1024, ubatch=512, date="2025-10-01")
    layers = moe.layers - (moe.moe.dense_layers if moe.moe else 0)
    assert old.expert_matmuls == pytest.approx(2 * layers * 3 * 128, rel=1e-6)
    # One MMQ kernel takes all experts in current builds, and a dense model has no experts at all.
    assert prefill_terms(moe, q, r9700, "llama.cpp", 1024, ubatch=512).expert_matmuls == 0
    assert prefill_terms(model("qwen3-8b"), q, r9700, "llama.cpp", 1024, ubatch=512,
                         date="2025-10-01").expert_matmuls == 0
    # A batch small enough that few experts get a token launches fewer matmuls.
    few = prefill_terms(moe, q, r9700, "llama.cpp", 96, ubatch=96, date="2025-10-01")
    assert 0 < few.expert_matmuls < layers * 3 * 128


def test_a_fused_gate_up_tensor_makes_two_expert_matmuls_per_layer_not_three() -> None:
    # Gemma 4's GGUFs keep each expert's gate and up projections as one tensor (ffn_gate_up_exps): the fallback runs
    # two matmuls per expert, and each routed token's input is copied to int8 once, not once for gate and once for up.
    gemma, qwen, q, v100 = model("gemma-4-26b-a4b"), model("qwen3-30b-a3b"), quant("q4_0"), gpu("nvidia-v100-sxm2-16gb")
    assert gemma.moe is not None and gemma.moe.fused_gate_up
    assert qwen.moe is not None and not qwen.moe.fused_gate_up
    t = prefill_terms(gemma, q, v100, "llama.cpp", 512, ubatch=512, date="2026-06-23")
    assert t.expert_matmuls == pytest.approx(gemma.layers * 2 * 128 * (1 - math.exp(-32)), rel=1e-6)
    unfused = gemma.model_copy(update={"moe": gemma.moe.model_copy(update={"fused_gate_up": False})})
    assert prefill_terms(unfused, q, v100, "llama.cpp", 512, ubatch=512,
                         date="2026-06-23").expert_matmuls == pytest.approx(1.5 * t.expert_matmuls, rel=1e-9)
    routed = gemma.layers * 8 * gemma.hidden_size * k.ACTIVATION_BYTES_PER_ELEMENT
    assert activation_bytes_per_token(unfused) - activation_bytes_per_token(gemma) == pytest.approx(routed, rel=1e-9)


def test_without_flash_attention_the_score_matrix_goes_through_memory() -> None:
    m, q, g = model("qwen3-8b"), quant("q4_k_m"), gpu("nvidia-v100-pcie-16gb")
    off = prefill_terms(m, q, g, "llama.cpp", 2048, flash_attn=False)
    assert prefill_terms(m, q, g, "llama.cpp", 2048, flash_attn=True).score_matrix_s == 0
    # Each 512-token micro-batch multiplies its queries by the whole cache view, the masked future half included:
    # a token scores half the prompt on average plus half a micro-batch.
    scores = m.layers * m.attention_heads * 2048 * (1024 + 256)
    assert off.score_matrix_s == pytest.approx(16 * scores / (achieved_bandwidth_gbs(g) * 1e9), rel=1e-6)
    # Deeper caches mean more scores per prompt token, so more traffic.
    assert prefill_terms(m, q, g, "llama.cpp", 2048, 8192, flash_attn=False).score_matrix_s > 4 * off.score_matrix_s


def test_unfused_attention_computes_the_masked_half_of_each_micro_batch() -> None:
    m, q, g = model("qwen3-8b"), quant("q4_k_m"), gpu("nvidia-rtx-4090")
    fused = prefill_terms(m, q, g, "llama.cpp", 512, ubatch=512, flash_attn=True)
    unfused = prefill_terms(m, q, g, "llama.cpp", 512, ubatch=512, flash_attn=False)
    # One micro-batch at an empty cache: the fused kernel skips the masked tiles, the BLAS products do not.
    assert unfused.attention_s == pytest.approx(2 * fused.attention_s, rel=1e-3)
    # Small micro-batches waste less: the masked corner is u²/2 per micro-batch.
    long_fused = prefill_terms(m, q, g, "llama.cpp", 4096, ubatch=128, flash_attn=True)
    long_unfused = prefill_terms(m, q, g, "llama.cpp", 4096, ubatch=128, flash_attn=False)
    assert long_unfused.attention_s / long_fused.attention_s == pytest.approx((2048 + 64) / 2048, rel=1e-3)


def test_an_engine_without_runs_of_its_own_answers_with_its_familys_band_widened() -> None:
    from estimator.calibration import constants as fitted
    from estimator.engines import UNFITTED_BAND_WIDEN, band_for

    assert "vllm" in fitted.MEASURED_ENGINES["decode"] and "trt-llm" not in fitted.MEASURED_ENGINES["decode"]
    h100 = gpu("nvidia-h100-sxm")
    vllm, trt = band_for("decode", "vllm", h100, False), band_for("decode", "trt-llm", h100, False)
    assert trt == pytest.approx((vllm[0] * UNFITTED_BAND_WIDEN, vllm[1] * UNFITTED_BAND_WIDEN))


def test_prompts_timed_cold_are_neither_fitted_nor_scored() -> None:
    from estimator.calibration.fit import all_rows, cold_prompt_rows

    rows, _ = all_rows()
    cold = cold_prompt_rows()
    assert not any(r.cold_prompt for r in rows)
    assert cold and all(r.kind == "prefill" and "XiongjieDai" in r.source and r.date < "2024" for r in cold)
    # The decode rows of the same runs (1023 tokens, one-time setup spread thin) stay.
    assert any(r.kind == "decode" and "c79519347c" in r.source for r in rows)


def test_cold_prompts_estimated_at_their_own_build_come_out_over() -> None:
    """The model fitted without them, at each row's own build, estimates a warm prompt: faster than one that paid
    the first pass's setup, on nearly every card (the excess accuracy.py prints)."""
    import math

    from estimator.calibration.fit import all_rows, cold_prompt_rows, held_apart_residuals

    cold = cold_prompt_rows()
    residuals = held_apart_residuals(all_rows()[0], cold)
    assert [r.row for r in residuals] == [r for r in cold if r.gpus == 1]
    over = [math.exp(-r.log_error) > 1 for r in residuals]
    assert sum(over) >= 0.8 * len(over)


def test_measured_engines_need_rows_from_more_than_one_source() -> None:
    from dataclasses import replace

    from estimator.calibration.fit import all_rows, measured_engines
    from estimator.calibration.model import MIN_GROUP_ROWS

    rows, _ = all_rows()
    one = [r for r in rows if r.engine == "llama.cpp"][:MIN_GROUP_ROWS]
    assert measured_engines([replace(r, source="one table") for r in one]) == ()
    assert measured_engines([replace(r, source=f"table {i % 2}") for i, r in enumerate(one)]) == ("llama.cpp",)


def test_exllamav3_runs_exl3_on_cuda_only() -> None:
    from estimator.engines import DEFAULT_FORMAT, runs_format, supports

    assert supports("exllamav3", gpu("nvidia-rtx-4090")) and not supports("exllamav3", gpu("amd-rx-7900-xtx"))
    assert supports("exllamav3", gpu("nvidia-a100-80gb-sxm")) and supports("exllamav3", gpu("nvidia-b300"))
    assert not supports("exllamav3", gpu("nvidia-t4")) and supports("exllamav2", gpu("nvidia-t4"))
    assert supports("exllamav2", gpu("amd-rx-7900-xtx"))
    assert runs_format("exllamav3", quant("exl3-4.0bpw")) and not runs_format("exllamav3", quant("exl2-4.0bpw"))
    assert not runs_format("exllamav2", quant("exl3-4.0bpw"))
    assert all(quant(q).engines == ("exllamav3",) for q in DEFAULT_FORMAT["exllamav3"].values())
    assert not supports("trt-llm", gpu("amd-mi300x")) and supports("trt-llm", gpu("nvidia-l40s"))


def test_units_times_clock_follow_the_fp32_rate_and_the_lanes_of_one_unit() -> None:
    from estimator.engines import unit_clocks_per_s

    # Datasheet SM (CU) counts and boost clocks: A100 108 SMs at 1.41 GHz, H100 SXM 132 at 1.98 GHz, RTX 4090
    # 128 at 2.52 GHz, MI300X 304 CUs at 2.1 GHz (its FP32 figure counts packed math), RX 7900 XTX 96 CUs at 2.5 GHz
    # (its FP32 figure counts dual issue).
    for gid, units, ghz in (("nvidia-a100-80gb-sxm", 108, 1.41), ("nvidia-h100-sxm", 132, 1.98),
                            ("nvidia-rtx-4090", 128, 2.52), ("amd-mi300x", 304, 2.1), ("amd-rx-7900-xtx", 96, 2.5)):
        assert unit_clocks_per_s(gpu(gid)) == pytest.approx(units * ghz * 1e9, rel=0.03), gid


def test_a_bandwidth_rich_sm_poor_die_streams_below_its_bandwidth_ratio() -> None:
    # An H200 is an H100 die with 1.4x the memory bandwidth: single-sequence decode gains far less than that (the
    # 13-GPU blog in the data measured it within 5 % of the H100 on ten models), because
    # the SMs keep only so many loads in flight. A GeForce card of a similar bandwidth per SM does not lose so much.
    m, q = model("llama-3.1-8b"), quant("q4_k_m")
    h100, h200 = gpu("nvidia-h100-sxm"), gpu("nvidia-h200-sxm")
    speedup = (decode_seconds_per_step(m, q, h100, "llama.cpp", 512, "f16")
               / decode_seconds_per_step(m, q, h200, "llama.cpp", 512, "f16"))
    assert 0.85 < speedup < achieved_bandwidth_gbs(h200) / achieved_bandwidth_gbs(h100)
    from estimator.calibration import constants as fitted
    from estimator.engines import covariates

    per_unit = {g: covariates(gpu(g))["bytes_per_unit_clock"] for g in ("nvidia-rtx-4090", "nvidia-h100-sxm",
                                                                           "nvidia-h200-sxm", "nvidia-b300")}
    assert per_unit["nvidia-rtx-4090"] < per_unit["nvidia-h100-sxm"] < per_unit["nvidia-h200-sxm"] < per_unit[
        "nvidia-b300"]
    # The fitted slope says more bytes per SM-clock stream at a lower share of the bandwidth, not the reverse.
    assert fitted.DECODE_OFFSETS[("inv_weight_efficiency", "bytes_per_unit_clock", "llama.cpp")].value > 0


def test_a_server_on_an_h200_decodes_faster_than_on_an_h100() -> None:
    # The slope and each card's own offset are fitted per engine family: llama.cpp's measured H200 ≈ H100 says nothing
    # of a server's GEMMs, which keep more loads in flight. Never slower on the same die with more bandwidth.
    m, q = model("llama-3.1-70b"), quant("fp8")
    h100, h200 = gpu("nvidia-h100-sxm"), gpu("nvidia-h200-sxm")
    speedup = (decode_seconds_per_step(m, q, h100, "vllm", 4096, "f16")
               / decode_seconds_per_step(m, q, h200, "vllm", 4096, "f16"))
    assert 1.05 < speedup < achieved_bandwidth_gbs(h200) / achieved_bandwidth_gbs(h100)
    from estimator.calibration import constants as fitted

    slope = fitted.DECODE_OFFSETS[("inv_weight_efficiency", "bytes_per_unit_clock", "server")].value
    assert slope < fitted.DECODE_OFFSETS[("inv_weight_efficiency", "bytes_per_unit_clock", "llama.cpp")].value


def test_bf16_weights_without_bf16_instructions_multiply_at_the_fp32_rate() -> None:
    from estimator.engines import has_bf16_math

    bf16, f16 = quant("bf16"), quant("f16")
    for gid in ("amd-mi50-32gb", "nvidia-t4", "nvidia-v100-pcie-16gb"):
        g = gpu(gid)
        assert not has_bf16_math(g)
        assert compute_tflops("llama.cpp", bf16, g) == pytest.approx(g.fp32_tflops, rel=0.01), gid
        assert compute_tflops("llama.cpp", f16, g) == g.fp16_tflops, gid
    for gid in ("nvidia-a100-80gb-sxm", "amd-mi300x", "amd-rx-7900-xtx"):
        g = gpu(gid)
        assert has_bf16_math(g)
        assert compute_tflops("llama.cpp", bf16, g) == compute_tflops("llama.cpp", f16, g), gid


def test_i_quants_unpack_through_codebooks_at_about_twice_a_k_quants_alu_work() -> None:
    """vec_dot_iq2_xxs_q8_1 looks each 8 weights up in a grid table and unpacks their signs: about 2.3× the
    instructions of vec_dot_q4_K_q8_1 per weight; IQ4_XS maps nibbles through a 16-entry table, in between."""
    for gid in ("amd-mi50-32gb", "nvidia-rtx-4090"):
        g = gpu(gid)
        k_quant = decode_coefficients("llama.cpp", quant("q4_k_m"), g).dequant_ops_per_weight
        grid = decode_coefficients("llama.cpp", quant("iq2_xxs"), g).dequant_ops_per_weight
        table = decode_coefficients("llama.cpp", quant("iq4_xs"), g).dequant_ops_per_weight
        assert 1.5 * k_quant < grid < 4 * k_quant, (gid, k_quant, grid)
        assert k_quant < table < grid, (gid, k_quant, table, grid)


def test_tensor_parallel_all_reduces_once_after_each_mixer_and_each_mlp(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Llama layer all-reduces after its attention and after its MLP; a Nemotron-H block is one or the other, so
    its 52 blocks all-reduce 52 times, not 104."""
    g, q = gpu("nvidia-h100-sxm"), quant("bf16")
    latency = k.ALLREDUCE_LATENCY_S["nvlink"]

    def all_reduce_s(model_id: str) -> float:
        m = model(model_id)
        with_links = decode_seconds_per_step(m, q, g, "vllm", 512, "f16", gpus=2)
        monkeypatch.setitem(k.ALLREDUCE_LATENCY_S, "nvlink", 0.0)
        without = decode_seconds_per_step(m, q, g, "vllm", 512, "f16", gpus=2)
        monkeypatch.setitem(k.ALLREDUCE_LATENCY_S, "nvlink", latency)
        return with_links - without

    assert all_reduce_s("nemotron-3-nano-30b-a3b") == pytest.approx(52 * latency)
    assert all_reduce_s("llama-3.1-8b") == pytest.approx(32 * 2 * latency)


def test_sycl_prompt_batches_run_on_the_xmx_engines_only_in_an_f16_build() -> None:
    """llama.cpp's SYCL backend dequantises each matrix for oneDNN: an F16 copy on the XMX engines (the default
    since llama.cpp#23996), an F32 one on the vector lanes before it or where a row says its build had it off."""
    q, b580, m = quant("q4_k_m"), gpu("intel-arc-b580"), model("qwen3-8b")
    assert prefill_gemm(q, b580) == "onednn-f16"
    assert prefill_gemm(q, b580, date="2026-01-15") == "onednn-f32"
    assert prefill_gemm(q, b580, date="2026-01-15", sycl_f16=True) == "onednn-f16"
    assert prefill_gemm(q, b580, date="2026-09-01", sycl_f16=False) == "onednn-f32"
    assert compute_tflops("llama.cpp", q, b580, "onednn-f16") == b580.fp16_tflops
    assert compute_class("llama.cpp", q, b580, "onednn-f32") == "fp32"
    f16 = prefill_terms(m, q, b580, "llama.cpp", 512, sycl_f16=True)
    f32 = prefill_terms(m, q, b580, "llama.cpp", 512, sycl_f16=False)
    # The XMX F16 rate is several times the FP32 lanes' (B580: 116.5 against 13.7 TFLOPS) ...
    assert f32.matmul_s > 5 * f16.matmul_s
    # ... and the F32 copy moves twice the bytes; either build unpacks every weight once per pass, not per tile.
    assert f32.weight_passes_s > f16.weight_passes_s
    assert f16.tile_dequant_s == f32.tile_dequant_s > 0
    assert prefill_terms(m, q, b580, "llama.cpp", 1024, sycl_f16=True).tile_dequant_s == 2 * f16.tile_dequant_s
    # An estimate is for the current default build.
    assert prefill_terms(m, q, b580, "llama.cpp", 512) == f16


def test_sycl_decodes_a_type_without_a_reorder_kernel_on_the_slow_generic_path() -> None:
    """llama.cpp's SYCL backend streams Q4_0, Q4_K, Q6_K, Q8_0, Q5_K, Q3_K and Q2_K through reorder kernels (each from
    the day it landed); other types, the i-quants among them, take the generic kernel, which llama.cpp#21527 measured
    at a third of the reorder kernel's rate for Q8_0. CUDA has no such split."""
    b580, m = gpu("intel-arc-b580"), model("qwen3-8b")
    assert decode_kernel("llama.cpp", quant("q4_k_m"), b580) == "k"
    assert decode_kernel("llama.cpp", quant("iq3_s"), b580) == "sycl-generic"
    assert decode_kernel("llama.cpp", quant("q8_0"), b580, date="2026-03-01") == "sycl-generic"
    assert decode_kernel("llama.cpp", quant("q8_0"), b580, date="2026-05-01") == "q8"
    assert decode_kernel("llama.cpp", quant("iq3_s"), b580, sycl_reorder=True) == "iq"
    assert decode_kernel("llama.cpp", quant("iq3_s"), gpu("nvidia-rtx-4090")) == "iq"
    assert decode_kernel("llama.cpp", quant("bf16"), b580) == "f16"
    # IQ3_S is the smaller file, yet on SYCL it decodes well below Q3_K_S; on CUDA the smaller file is the faster.
    def tps(q: str, g: GPU) -> float:
        return speed_of(m, quant(q), g, 1, "llama.cpp", "f16", 512).decode_tps

    assert tps("iq3_s", b580) < 0.8 * tps("q3_k_s", b580)
    g4090 = gpu("nvidia-rtx-4090")
    assert tps("iq3_s", g4090) > 0.9 * tps("q3_k_s", g4090)


def test_prompt_activations_weigh_more_per_weight_on_a_small_model() -> None:
    """Each prompt token's F32 activations pass through memory between a layer's kernels: about 16 hidden-state
    vectors and 5 FFN-width vectors per layer. Llama 3.1 8B (config.json: 32 layers, hidden 4096, FFN 14336):
    4 × 32 × (16 × 4096 + 5 × 14336) bytes. Qwen3-30B-A3B's FFN is its 8 routed experts of 768, and each of the 8 moves
    the 2048-wide hidden state 8 more times (its input copies, its output, the router weight and the sum)."""
    assert activation_bytes_per_token(model("llama-3.1-8b")) == 4 * 32 * (16 * 4096 + 5 * 14336)
    assert activation_bytes_per_token(model("qwen3-30b-a3b")) == 4 * 48 * (16 * 2048 + 5 * 8 * 768 + 8 * 8 * 2048)
    g, q = gpu("nvidia-rtx-4090"), quant("q4_k_m")

    def share(mid: str) -> float:
        t = prefill_terms(model(mid), q, g, "llama.cpp", 512)
        return t.activation_s / t.matmul_s

    assert share("qwen3-0.6b") > 2 * share("llama-3.1-8b") > 0


def test_chat_front_ends_pay_for_sampling_over_the_vocabulary() -> None:
    """Ollama and LM Studio sample every token on the host over the whole vocabulary; llama-bench samples nothing.
    Gemma 3's 262k-entry vocabulary costs more there than Llama 3.1's 128k."""
    g, q = gpu("nvidia-rtx-4090"), quant("q4_k_m")
    llama, gemma = model("llama-3.1-8b"), model("gemma-3-12b")
    assert decode_terms(llama, q, g, "llama.cpp", 512, "f16").sampled_vocab == 0
    assert decode_terms(llama, q, g, "ollama", 512, "f16").sampled_vocab == llama.vocab_size / 1e5
    assert decode_terms(gemma, q, g, "lm studio", 512, "f16").sampled_vocab > 2 * decode_terms(
        llama, q, g, "lm studio", 512, "f16").sampled_vocab / 1.1
    extra = decode_seconds_per_step(llama, q, g, "ollama", 512, "f16") - decode_seconds_per_step(
        llama, q, g, "llama.cpp", 512, "f16")
    assert extra > 0


def test_unsloth_q8_k_xl_decodes_as_the_q8_0_it_is_made_of_on_sycl() -> None:
    """GGML's Q8_K type only ever holds activations: a "Q8_K_XL" file's matrices are Q8_0 (a few kept in BF16), which
    has had a SYCL reorder kernel since llama.cpp#21527."""
    b580 = gpu("intel-arc-b580")
    assert decode_kernel("llama.cpp", quant("ud-q8_k_xl"), b580) == decode_kernel("llama.cpp", quant("q8_0"), b580)
    assert decode_kernel("llama.cpp", quant("ud-q8_k_xl"), b580, date="2026-03-01") == "sycl-generic"


def test_a_row_may_state_the_prompt_kernel_its_branch_ran() -> None:
    """A PR column that ran RDNA 3's WMMA-MMQ kernels before they were merged (llama.cpp#17576, 2025-11-28) is priced
    as MMQ, whatever master did that day; an F16 model still goes to BLAS and SYCL keeps its oneDNN copy."""
    w7900, q = gpu("amd-radeon-pro-w7900"), quant("q3_k_s")
    assert prefill_gemm(q, w7900, date="2025-11-28") == "blas"
    assert prefill_gemm(q, w7900, date="2025-11-28", mmq=True) == "mmq"
    assert prefill_gemm(quant("bf16"), w7900, mmq=True) == "blas"
    assert prefill_gemm(q, gpu("intel-arc-b580"), mmq=True) == "onednn-f16"


def test_a_step_without_logits_skips_the_output_layer() -> None:
    from estimator.memory import embedding_table_params
    from estimator.speed import decode_terms
    m, q, g = model("gemma-2b"), quant("q4_0"), gpu("nvidia-rtx-3090")
    every = decode_terms(m, q, g, "llama.cpp", 1024, "f16")
    last_only = decode_terms(m, q, g, "llama.cpp", 1024, "f16", output_head=False)
    head_bytes = embedding_table_params(m) * q.output_bits / 8
    bandwidth = achieved_bandwidth_gbs(g) * 1e9
    assert every.dense_weights_s - last_only.dense_weights_s == pytest.approx(head_bytes / bandwidth, rel=1e-9)
    # Gemma's 256k-entry vocabulary makes the output layer a fifth of what a 2B step reads.
    assert 0.15 < 1 - last_only.dense_weights_s / every.dense_weights_s < 0.35
    assert last_only.kv_read_s == every.kv_read_s and last_only.layers == every.layers


def test_a_prompt_test_row_is_priced_without_the_output_layer_or_the_host_wait() -> None:
    from dataclasses import replace

    from estimator.calibration.fit import DECODE_PARAMS, decode_features
    from estimator.calibration.measurements import Row

    decode = Row(kind="decode", gpu=gpu("nvidia-rtx-3090"), gpus=1, model=model("gemma-2b"), quant=quant("q4_0"),
                 tokens=256, depth=0, measured_tps=100.0, source="test", holdout=False)
    prompt_test = replace(decode, ubatch=1, output_every_token=False)
    names = [p.name for p in DECODE_PARAMS]
    a = dict(zip(names, decode_features(decode), strict=True))
    b = dict(zip(names, decode_features(prompt_test), strict=True))
    assert a["token_overhead_s"] == 1.0 and b["token_overhead_s"] == 0.0
    assert b["inv_weight_efficiency"] < a["inv_weight_efficiency"]
    assert b["layer_overhead_s"] == a["layer_overhead_s"] and b["inv_kv_efficiency"] == a["inv_kv_efficiency"]


def test_mmq_tiles_unpack_for_dot_products_or_matrix_units_in_groups_of_their_own() -> None:
    from estimator.calibration.model import mmq_on_dot_products, situation_groups

    assert mmq_on_dot_products(gpu("nvidia-tesla-p40")) and mmq_on_dot_products(gpu("amd-mi50-32gb"))
    assert not mmq_on_dot_products(gpu("nvidia-rtx-4090")) and not mmq_on_dot_products(gpu("amd-rx-7900-xtx"))
    assert not mmq_on_dot_products(gpu("amd-mi100"))  # MFMA
    p40 = situation_groups("llama.cpp", gpu("nvidia-tesla-p40"), "q4_0", "int8")
    ada = situation_groups("llama.cpp", gpu("nvidia-rtx-4090"), "q4_0", "int8")
    assert p40["compute"] == ada["compute"] and p40["mmq_unit"] != ada["mmq_unit"]
    # A BLAS GEMM unpacks nothing per tile: the level has nothing to say there.
    assert situation_groups("llama.cpp", gpu("nvidia-tesla-p40"), "f16", "fp16")["mmq_unit"] == "default"


def test_a_gpu_listing_only_fp32_runs_its_matrix_kernels_at_its_dies_tensor_rate() -> None:
    """The RTX 4060 Laptop GPU and the A10G list FP32 only. Their prompt GEMMs run on the same tensor cores as their
    desktop and datacenter siblings (4× FP32 in FP16 on AD10x and GA10x, int8 twice that), not on the FP32 lanes: an
    A10 that listed only its FP32 rate would be estimated as the A10 is; the A10G (its board capped at 300 W where the
    A10's is 150 W, so it holds its clocks at least as well) at no less than the A10 within their FP32 ratio; the laptop
    at most its desktop sibling's."""
    q4 = quant("q4_k_m")
    laptop, a10g, a10 = gpu("nvidia-rtx-4060-laptop"), gpu("nvidia-a10g"), gpu("nvidia-a10")
    assert laptop.fp16_tflops is None and laptop.int8_tops is None and a10g.fp16_tflops is None
    assert laptop.fp32_tflops is not None and a10g.fp32_tflops is not None and a10.fp32_tflops is not None
    assert matrix_tflops(laptop) == pytest.approx(4 * laptop.fp32_tflops, rel=0.01)
    assert int8_matrix_tops(laptop) == pytest.approx(8 * laptop.fp32_tflops, rel=0.01)
    assert compute_tflops("llama.cpp", q4, laptop, "mmq") == pytest.approx(8 * laptop.fp32_tflops, rel=0.01)
    m = model("llama-3.1-8b")
    a10g_pp = speed_of(m, q4, a10g, 1, "llama.cpp", "f16", 2048).prefill_tps
    a10_pp = speed_of(m, q4, a10, 1, "llama.cpp", "f16", 2048).prefill_tps
    listed = ("fp16_tflops", "bf16_tflops", "fp16_fp32acc_tflops", "int8_tops")
    fp32_only_a10 = a10.model_copy(update=dict.fromkeys(listed))
    assert speed_of(m, q4, fp32_only_a10, 1, "llama.cpp", "f16", 2048).prefill_tps == pytest.approx(a10_pp, rel=0.03)
    assert a10g_pp >= 0.95 * a10_pp * a10g.fp32_tflops / a10.fp32_tflops
    desktop_pp = speed_of(m, q4, gpu("nvidia-rtx-4060"), 1, "llama.cpp", "f16", 2048).prefill_tps
    laptop_pp = speed_of(m, q4, laptop, 1, "llama.cpp", "f16", 2048).prefill_tps
    assert 0.5 * desktop_pp < laptop_pp <= desktop_pp


def test_no_int8_rate_is_derived_without_a_sibling_die_that_lists_one() -> None:
    """The RTX PRO Blackwell cards share GB20x with the RTX 50 cards, which list int8 at twice FP16: they get that
    rule. DGX Spark's GB10 (LPDDR) and the B300 (Blackwell Ultra) have no listed sibling die and keep what they list;
    dot-product GPUs (V100, MI50) have no int8 matrix units at all."""
    pro = gpu("nvidia-rtx-pro-6000-blackwell")
    assert pro.int8_tops is None and pro.fp16_tflops is not None
    assert int8_matrix_tops(pro) == pytest.approx(2 * pro.fp16_tflops, rel=0.01)
    for gid in ("nvidia-gb10", "nvidia-b300", "nvidia-v100-pcie-16gb", "amd-mi50-32gb", "amd-radeon-8060s-128gb"):
        assert int8_matrix_tops(gpu(gid)) is None, gid


def test_llama_cpp_int8_tiles_on_hopper_run_at_the_mma_sync_share_of_its_peak() -> None:
    """MMQ issues mma.sync, which reaches about 2/3 of Hopper's listed tensor rate (wgmma reaches it); cuBLAS's F16
    GEMMs and other engines keep the full rate, and other architectures keep theirs."""
    h100, l40s = gpu("nvidia-h100-sxm"), gpu("nvidia-l40s")
    assert h100.int8_tops is not None and l40s.int8_tops is not None
    assert compute_tflops("llama.cpp", quant("q4_k_m"), h100, "mmq") == pytest.approx(h100.int8_tops * 2 / 3)
    assert compute_tflops("llama.cpp", quant("f16"), h100, "blas") == h100.fp16_tflops
    assert compute_tflops("vllm", quant("f16"), h100) == h100.bf16_tflops
    assert compute_tflops("llama.cpp", quant("q4_k_m"), l40s, "mmq") == l40s.int8_tops


def test_dot_product_mmq_unpacks_each_weight_tile_for_half_as_many_prompt_tokens() -> None:
    """get_mmq_x_max_host: 128 token columns per tile with int8 MMA, MFMA or WMMA, 64 on dot products (Pascal, GCN,
    RDNA 2, and CDNA before its MFMA MMQ), so the same prompt unpacks the weights twice as often there."""
    from estimator.engines import alu_ops_per_s, mmq_tile_tokens
    from estimator.speed import unpacked_weight_tiles

    assert mmq_tile_tokens(gpu("nvidia-rtx-4090")) == 128
    assert mmq_tile_tokens(gpu("amd-mi50-32gb")) == mmq_tile_tokens(gpu("nvidia-tesla-p40")) == 64
    assert mmq_tile_tokens(gpu("amd-mi100")) == 128
    assert mmq_tile_tokens(gpu("amd-mi100"), "2025-03-01") == 64
    m, q = model("llama-3.1-8b"), quant("q4_k_m")
    assert unpacked_weight_tiles(m, 512, 512, tile=64)[0] == pytest.approx(2 * unpacked_weight_tiles(m, 512, 512)[0])
    p40 = gpu("nvidia-tesla-p40")
    terms = prefill_terms(m, q, p40, "llama.cpp", 512)
    assert terms.tile_dequant_s == pytest.approx(unpacked_weight_tiles(m, 512, 512, tile=64)[0] / alu_ops_per_s(p40))


def test_prompt_tiles_unpack_at_the_integer_lane_rate() -> None:
    """GA10x, Ada and Hopper run INT32 on half the lanes their FP32 figure counts; GP100, Volta, Turing and GA100 pair
    an INT32 lane with every FP32 one, GeForce Blackwell unifies them, and AMD, Intel and Apple share the lanes."""
    from estimator.engines import alu_ops_per_s, int_ops_per_s
    from estimator.speed import unpacked_weight_tiles

    for gid in ("nvidia-rtx-3090", "nvidia-rtx-4090", "nvidia-l40s", "nvidia-h100-sxm", "nvidia-a10"):
        assert int_ops_per_s(gpu(gid)) == pytest.approx(alu_ops_per_s(gpu(gid)) / 2), gid
    for gid in ("nvidia-a100-80gb-sxm", "nvidia-v100-sxm2-16gb", "nvidia-t4", "nvidia-rtx-5090", "nvidia-tesla-p40",
                "amd-rx-7900-xtx", "apple-m4-max-128gb"):
        assert int_ops_per_s(gpu(gid)) == alu_ops_per_s(gpu(gid)), gid
    m, q, g = model("llama-3.1-8b"), quant("q4_k_m"), gpu("nvidia-rtx-4090")
    terms = prefill_terms(m, q, g, "llama.cpp", 512)
    assert terms.tile_dequant_s == pytest.approx(unpacked_weight_tiles(m, 512, 512)[0] / int_ops_per_s(g))
    # Decode's non-overlapped unpacking keeps the FP32-lane rate: its ALU seconds match a Turing-style card's (INT32
    # beside every FP32 lane) with the same FP32 figure and memory.
    from estimator.speed import decode_terms

    paired = g.model_copy(update={"architecture": "Turing"})
    assert int_ops_per_s(paired) == alu_ops_per_s(paired) == alu_ops_per_s(g)
    assert decode_terms(m, q, g, "llama.cpp", 4096, "f16").dequant_op_s == pytest.approx(
        decode_terms(m, q, paired, "llama.cpp", 4096, "f16").dequant_op_s)


def test_a_card_listing_only_fp32_takes_its_power_covariate_from_its_derived_tensor_rate() -> None:
    from estimator.calibration.model import watts_per_tflops
    from estimator.engines import board_watts_per_tflops, matrix_tflops

    a10g, a10 = gpu("nvidia-a10g"), gpu("nvidia-a10")
    assert watts_per_tflops(a10g) is None and a10g.tdp_w is not None
    assert board_watts_per_tflops(a10g) == pytest.approx(a10g.tdp_w / matrix_tflops(a10g))
    assert board_watts_per_tflops(a10) == watts_per_tflops(a10)
    # No derived rate without listed siblings: an FP32-only GB10 (no sibling lists a tensor rate) stays unknown.
    gb10 = gpu("nvidia-gb10").model_copy(update={"fp16_tflops": None, "bf16_tflops": None})
    assert board_watts_per_tflops(gb10) is None


@pytest.mark.parametrize("mid", ["gpt-oss-20b", "gpt-oss-120b", "llama-3.1-8b", "qwen3-30b-a3b"])
def test_prompt_matmuls_count_the_body_whatever_tables_the_card_counts(mid: str) -> None:
    """A prompt token's matmuls are the active body (no lookup, no LM head), the same figure whether the card's
    active count includes both tables (Llama, Qwen) or the head only (gpt-oss): checked against the count the
    architecture gives, less both tables."""
    m = model(mid)
    tables = (1 if m.tied_embeddings else 2) * m.vocab_size * m.hidden_size
    body = active_decoder_params(m) - tables
    assert active_body_params(m) == pytest.approx(body, rel=0.02)
    assert matmul_flops(m, 100) == pytest.approx(2 * 100 * body, rel=0.02)


@pytest.mark.parametrize(("gid", "engine", "qid", "prompt"), [
    ("nvidia-h100-sxm", "vllm", "bf16", 2048), ("nvidia-rtx-4090", "llama.cpp", "q4_k_m", 300),
    ("nvidia-rtx-4090", "llama.cpp", "q4_k_m", 8192),
])
def test_prompts_arriving_together_share_the_gemms_but_not_their_attention(
    gid: str, engine: Engine, qid: str, prompt: int,
) -> None:
    m, q, g = model("llama-3.1-8b"), quant(qid), gpu(gid)
    one = prefill_seconds(m, q, g, engine, prompt)
    assert prefill_seconds_together(m, q, g, engine, prompt, 1) == one
    last = prefill_seconds_together(m, q, g, engine, prompt, 32)
    # Never faster than one prompt each way, never slower than 32 in a row; one long prompt of all their tokens
    # pays attention over 32× the length, so it takes longer still.
    assert one * 16 < last <= one * 32
    assert last < prefill_seconds(m, q, g, engine, prompt * 32)
    speed = speed_of(m, q, g, 1, engine, "f16", prompt, 32)
    assert speed.ttft_last_s == pytest.approx(last)
    assert speed.ttft_last_s_low < speed.ttft_last_s < speed.ttft_last_s_high


def test_gfx1151_rocblas_before_its_tuned_kernels_is_its_own_group() -> None:
    """A Strix Halo build of August 2025 ran prompt GEMMs through rocBLAS's generic kernels unless hipBLASLt was
    switched on; later builds, other chips, MMQ tiles and every estimate (no date) are not in that group."""
    from estimator.calibration.model import PRIOR_LOG_OFFSET, situation_groups

    halo, xtx = gpu("amd-radeon-8060s-128gb"), gpu("amd-rx-7900-xtx")

    def library(card: GPU, *, date: str = "", hipblaslt: bool | None = None, compute: str = "fp16",
                engine: str = "llama.cpp") -> str:
        return situation_groups(engine, card, "q4_k", compute, date=date, hipblaslt=hipblaslt)["blas_library"]

    assert library(halo, date="2025-08-04", hipblaslt=False) == "rocblas-untuned"
    assert library(halo, date="2025-08-07") == "rocblas-untuned"  # rocBLAS was the default: the flag is opt-in
    assert library(halo, date="2025-09-28", hipblaslt=True) == "hipblaslt"
    assert library(halo, date="2026-05-16") == "default"
    assert library(halo) == "default"
    assert library(halo, date="2025-08-04", compute="int8") == "default"
    assert library(halo, date="2025-08-04", engine="vllm") == "default"
    assert library(xtx, date="2025-08-04", hipblaslt=False) == "rocblas"
    assert PRIOR_LOG_OFFSET[("inv_matmul_utilisation", "blas_library", "rocblas-untuned")] > 1.0


def test_untuned_rocblas_factor_is_the_measured_rate_against_the_fitted_one() -> None:
    """The untuned group's prior is the ratio of the chip's fitted F16 GEMM rate (current build, default library) to
    the 4.89 TFLOPS llama.cpp's MUL_MAT test measured without tuned kernels: a refit that moves the first must move
    the factor with it, or an untuned build is priced against a rate the model no longer has."""
    import math

    from estimator.calibration.model import (
        PRIOR_LOG_OFFSET,
        ROCBLAS_UNTUNED_GFX1151_TFLOPS,
        ROCBLAS_UNTUNED_LOG_FACTOR,
    )
    from estimator.engines import prefill_coefficients

    halo = gpu("amd-radeon-8060s-128gb")
    f16 = quant("f16")
    coefficient = prefill_coefficients("llama.cpp", f16, halo).inv_matmul_utilisation
    wanted = math.log(compute_tflops("llama.cpp", f16, halo) / coefficient / ROCBLAS_UNTUNED_GFX1151_TFLOPS)
    prior = PRIOR_LOG_OFFSET[("inv_matmul_utilisation", "blas_library", "rocblas-untuned")]
    assert prior == ROCBLAS_UNTUNED_LOG_FACTOR
    assert abs(ROCBLAS_UNTUNED_LOG_FACTOR - wanted) < math.log(1.15)


def test_an_older_build_pays_for_its_attention_kernels() -> None:
    """Flash-attention kernels were rewritten build by build: a CUDA row's build age prices its attention slower, as
    it does its GEMMs, while an estimate (age zero) gets today's kernels."""
    from estimator.calibration.constants import PREFILL_OFFSETS
    from estimator.calibration.model import PREFILL_PARAMS, situation_groups
    from estimator.engines import coefficient, covariates

    p = next(p for p in PREFILL_PARAMS if p.name == "inv_attention_utilisation")
    assert "build_age" in p.levels
    l4 = gpu("nvidia-l4")
    groups = situation_groups("llama.cpp", l4, "k", "mmq")
    today = coefficient(p, groups, PREFILL_OFFSETS, values={**covariates(l4), "build_age": 0.0})
    year_old = coefficient(p, groups, PREFILL_OFFSETS, values={**covariates(l4), "build_age": 1.0})
    assert year_old > today
    assert coefficient(p, groups, PREFILL_OFFSETS, values=covariates(l4)) == today


def test_a_range_for_several_gpus_is_widened_by_what_splitting_added() -> None:
    """Multi-GPU runs are never fitted; the band printed for several cards is the single-GPU band times the factor
    the fit chose on their misses, and one card's band is left alone."""
    from estimator.calibration.constants import MULTI_GPU_BAND_WIDEN
    from estimator.engines import band_for
    from estimator.speed import speed_of

    a10g, m, q = gpu("nvidia-a10g"), model("llama-3.1-8b"), quant("q4_k_m")
    for kind in ("decode", "prefill"):
        widen = MULTI_GPU_BAND_WIDEN[kind]
        assert widen >= 1.0  # never narrower than one card's; 1.0 where one card's band already holds their misses
        one = band_for(kind, "llama.cpp", a10g, False)
        four = band_for(kind, "llama.cpp", a10g, False, gpus=4)
        assert four == pytest.approx((one[0] * widen, one[1] * widen))
    # A split prompt's misses (54 % inside one card's band) need the widening.
    assert MULTI_GPU_BAND_WIDEN["prefill"] > 1.0
    single = speed_of(m, q, a10g, 1, "llama.cpp", "f16", 512)
    split = speed_of(m, q, a10g, 4, "llama.cpp", "f16", 512)
    assert split.decode_tps_high / split.decode_tps == pytest.approx(
        (single.decode_tps_high / single.decode_tps) ** MULTI_GPU_BAND_WIDEN["decode"], rel=0.02)
    assert split.ttft_s_high / split.ttft_s > single.ttft_s_high / single.ttft_s


def test_a_layer_split_pays_for_splitting_and_for_each_card_boundary() -> None:
    """llama.cpp's layer split decodes at one card's speed plus the fitted cost of splitting (once, and per card
    boundary) per token; a tensor-parallel server splits the work instead and pays no such cost."""
    from estimator.calibration.constants import LAYER_SPLIT_FIXED_S, LAYER_SPLIT_HOP_S
    from estimator.speed import decode_seconds_per_step

    # Tens of microseconds to milliseconds: synchronisations and copies, not another pass over the weights.
    assert 1e-5 < LAYER_SPLIT_FIXED_S + LAYER_SPLIT_HOP_S < 1e-2
    l40s, m, q = gpu("nvidia-l40s"), model("llama-3.1-8b"), quant("q4_k_m")
    one = decode_seconds_per_step(m, q, l40s, "llama.cpp", 4096, "f16", 1)
    for n in (2, 4, 8):
        split = decode_seconds_per_step(m, q, l40s, "llama.cpp", 4096, "f16", n)
        assert split - one == pytest.approx(LAYER_SPLIT_FIXED_S + (n - 1) * LAYER_SPLIT_HOP_S)
    served = decode_seconds_per_step(m, quant("bf16"), l40s, "vllm", 4096, "f16", 4)
    assert served < decode_seconds_per_step(m, quant("bf16"), l40s, "vllm", 4096, "f16", 1)


def _prompt_coefficient_and_without(name: str, card: GPU, key: tuple[str, str, str]) -> tuple[float, float, float]:
    """A Q4_K_M llama.cpp prompt coefficient of `card` as priced, as it would be without the fitted offset `key`, and
    its floor (the share no offset moves)."""
    from estimator.calibration import constants as fitted
    from estimator.calibration.model import PREFILL_PARAMS, situation_groups
    from estimator.engines import coefficient, covariates, floor_of

    p = next(p for p in PREFILL_PARAMS if p.name == name)
    q = quant("q4_k_m")
    groups = situation_groups("llama.cpp", card, decode_kernel("llama.cpp", q, card),
                              compute_class("llama.cpp", q, card))
    without = {k: v for k, v in fitted.PREFILL_OFFSETS.items() if k != key}
    floor = floor_of(p, card)
    alone = coefficient(p, groups, without, floor, covariates(card))
    return getattr(prefill_coefficients("llama.cpp", q, card), name), alone, floor


def test_a_die_without_prompt_rows_of_its_own_takes_its_architectures_attention_and_launch_rates() -> None:
    """The B200 has one prompt row (a die's offset needs eight), so its HBM die owns none, but llama.cpp's flash
    attention is the same mma code on every Blackwell die and its layers launch the same way: the architecture's fitted
    offsets, from the RTX 50, RTX PRO and GB10 rows, price it. Without that offset its coefficients lose exactly it."""
    from estimator.calibration import constants as fitted

    b200, rtx = gpu("nvidia-b200"), gpu("nvidia-rtx-5090")
    assert arch_group(b200) == arch_group(rtx) and die_group(b200) != die_group(rtx)
    for name in ("inv_attention_utilisation", "prefill_layer_overhead_s"):
        assert (name, "die", die_group(b200)) not in fitted.PREFILL_OFFSETS
        key = (name, "arch", arch_group(b200))
        offset = fitted.PREFILL_OFFSETS[key].value
        assert offset != 0.0
        priced, alone, floor = _prompt_coefficient_and_without(name, b200, key)
        assert priced == pytest.approx(floor + (alone - floor) * math.exp(offset)), name


def test_amds_wave64_and_wave32_lines_are_told_apart_and_other_vendors_have_no_group_of_their_own() -> None:
    from estimator.calibration.model import DEFAULT_GROUP, wave_group

    for gid in ("amd-mi50-32gb", "amd-mi100", "amd-mi300x", "amd-mi355x"):
        assert wave_group(gpu(gid), "rocm") == "rocm/wave64", gid
    for gid in ("amd-rx-6900-xt", "amd-rx-7900-xtx", "amd-radeon-8060s-128gb", "amd-rx-9070-xt"):
        assert wave_group(gpu(gid), "rocm") == "rocm/wave32", gid
    assert wave_group(gpu("amd-rx-7900-xtx"), "vulkan") == "vulkan/wave32"
    assert wave_group(gpu("nvidia-h100-sxm"), "cuda") == DEFAULT_GROUP
    assert wave_group(gpu("apple-m4-max-48gb"), "metal") == DEFAULT_GROUP


def test_an_instinct_parts_prompt_attention_does_not_take_rdnas_offset() -> None:
    """Nearly every ROCm prompt row where attention matters is an RDNA card's; that line's fitted attention offset
    prices the RX 7900 XTX and no wave64 part (an MI300X takes the backend's, as a card of a line without rows must)."""
    from estimator.calibration import constants as fitted

    name = "inv_attention_utilisation"
    key = (name, "wave", "rocm/wave32")
    offset = fitted.PREFILL_OFFSETS[key].value
    assert offset != 0.0
    assert (name, "wave", "rocm/wave64") not in fitted.PREFILL_OFFSETS
    for gid, moved in (("amd-rx-7900-xtx", True), ("amd-mi300x", False)):
        priced, alone, floor = _prompt_coefficient_and_without(name, gpu(gid), key)
        expected = floor + (alone - floor) * math.exp(offset) if moved else alone
        assert priced == pytest.approx(expected), gid
