"""Mixture-of-experts and long context (issue 11): architecture, compute, all-to-all, layouts,
whole-rack GPU counts, workload phases, and DeepSeek-V3's published training cost."""

from __future__ import annotations

import math
from dataclasses import replace
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from procure.catalog.calibration import load_knobs
from procure.catalog.load import default_catalog
from procure.catalog.software import resolve_software
from procure.catalog.types import MoE, ModelArch
from procure.economics import examples as ex
from procure.economics.basis import Modeled, performance
from procure.economics.bid import evaluate_core
from procure.economics.inputs import Assumptions, BidCase, Commitment, Phase
from procure.model import PlanSpec, Workload, active_param_count, estimate, param_count
from procure.model.expert import all_to_all_once_s, expert_layout
from procure.model.flops import forward_flops_per_token, mean_keys
from procure.model.problem import build_problem

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def cat():
    return default_catalog()


def _moe(experts: int, top_k: int, expert_ffn: int) -> ModelArch:
    return ModelArch(id="m", name="m", layers=16, hidden=2048, heads=16, kv_heads=4, ffn_hidden=6144,
                     vocab=32000, gated_mlp=True, moe=MoE(experts, top_k, expert_ffn), head_dim=128)


# ------------------------------------------------------------------------------ architecture


def test_the_presets_have_their_published_sizes(cat):
    sizes = {"deepseek-v3": (671 + 11.6, 37 + 1.2), "qwen3-235b-a22b": (235, 22), "qwen3-30b-a3b": (30.5, 3.3),
             "mixtral-8x22b": (141, 39), "gpt-oss-120b": (116.8, 5.1), "llama4-maverick": (400, 17)}
    for model_id, (total_b, active_b) in sizes.items():
        arch = cat.models[model_id]
        assert arch.sourced is not None and arch.sourced.source
        assert param_count(arch) / 1e9 == pytest.approx(total_b, rel=0.03), model_id
        assert active_param_count(arch) / 1e9 == pytest.approx(active_b, rel=0.15), model_id


def test_mla_windows_and_mtp_shape_the_flops(cat):
    ds = cat.models["deepseek-v3"]
    assert ds.mla is not None and ds.head_width == 192 and ds.moe.group_topk == 4
    parts = forward_flops_per_token(ds, 4096)
    # MLA scores at q.k 192 and values at 128 wide, over s/2 keys, on the 61 layers and the MTP one
    assert parts["attn_core"] == pytest.approx(62 * 2 * 2048 * 128 * (192 + 128))
    assert parts["logits"] == 2 * 2 * 7168 * 129280          # the MTP module's own output pass
    oss = cat.models["gpt-oss-120b"]
    # half the layers see 128 keys, half the causal s/2
    assert mean_keys(oss, 4096) == pytest.approx(0.5 * 2048 + 0.5 * (128 - 128 ** 2 / 8192))
    llama4 = cat.models["llama4-maverick"]
    assert llama4.moe_layer_count == 24 and mean_keys(llama4, 131072) == pytest.approx(
        0.25 * 65536 + 0.75 * 4096)


# ------------------------------------------------------------------------------ compute, a2a


@SETTINGS
@given(top_k=st.sampled_from([1, 2, 4]), more=st.sampled_from([1, 2, 4]),
       experts=st.sampled_from([16, 64, 128]), ep=st.sampled_from([1, 4, 8]))
def test_moe_step_time_grows_with_top_k_at_fixed_total_parameters(top_k, more, experts, ep):
    cat = default_catalog()
    accel, net = cat.accelerators["h100-sxm5-80gb"], cat.networks["ib-ndr400"]
    wl = Workload(seq_len=4096, global_batch=256)
    plan = PlanSpec(tp=1, pp=1, dp=8, cp=1, ep=ep, vpp=1, micro_batch=1, zero_stage=1, recompute="full",
                    sequence_parallel=False, tp_comm_overlap=False, overlap_grad_reduce=True)
    low, high = _moe(experts, top_k, 768), _moe(experts, min(experts, top_k * more), 768)
    assert param_count(low) == param_count(high)
    a = estimate(low, accel, net, 8, wl, plan, knobs=load_knobs())
    b = estimate(high, accel, net, 8, wl, plan, knobs=load_knobs())
    assert a.feasible and b.feasible
    assert b.step_time_s >= a.step_time_s
    if more > 1:
        assert b.step_time_s > a.step_time_s


@SETTINGS
@given(ep=st.sampled_from([8, 16, 32, 64]), tokens=st.sampled_from([1024, 4096, 16384]),
       top_k=st.sampled_from([1, 2, 4, 8]), dedup=st.sampled_from([0, 1]),
       fp8=st.booleans())
def test_all_to_all_inside_an_nvl72_domain_is_never_slower_than_across_nodes(ep, tokens, top_k, dedup, fp8):
    cat = default_catalog()
    gb200 = cat.accelerators["gb200-nvl72-186gb"]
    arch = _moe(128, top_k, 1536)
    wl = Workload(seq_len=4096, global_batch=256, precision="fp8" if fp8 else "bf16")
    kn = load_knobs().for_accelerator(gb200.id)
    times = []
    for gpn in (72, 4):       # one NVL72 rack, or 4-GPU nodes joined by the same NICs
        pb = build_problem(arch, replace(gb200, scale_up_domain=gpn), cat.networks["nvl72-ndr400"], 256,
                           wl)
        bw_up = pb.up_bw * kn.scale_up_bw_eff
        bw_nic = pb.nic_bw * kn.scale_out_bw_eff
        g, k = min(ep, gpn), math.ceil(ep / min(ep, gpn))
        times.append(float(all_to_all_once_s(pb, tokens, pb.dispatch_bytes, ep, g, k, dedup, bw_up, bw_nic)))
    inside, across = times
    assert inside <= across


def test_the_same_plan_on_nvl72_has_cheaper_all_to_all_than_on_8_gpu_nodes(cat):
    arch = cat.models["qwen3-235b-a22b"]
    wl = Workload(seq_len=4096, global_batch=2048, precision="fp8")
    plan = PlanSpec(tp=1, pp=8, dp=32, cp=1, ep=32, vpp=1, micro_batch=1, zero_stage=1, recompute="selective",
                    sequence_parallel=False, tp_comm_overlap=False, overlap_grad_reduce=True, etp=1,
                    moe_dispatcher="hybridep")
    rack = estimate(arch, cat.accelerators["gb200-nvl72-186gb"], cat.networks["nvl72-ndr400"], 256, wl, plan,
                    knobs=load_knobs())
    nodes = estimate(arch, replace(cat.accelerators["gb200-nvl72-186gb"], scale_up_domain=8),
                     cat.networks["nvl72-ndr400"], 256, wl, plan, knobs=load_knobs())
    assert rack.feasible and nodes.feasible
    assert rack.terms["ep_comm_total_s"] < nodes.terms["ep_comm_total_s"]
    assert expert_layout(rack.plan, 72)["inside_scale_up"] and not expert_layout(nodes.plan, 8)["inside_scale_up"]


def test_narrow_experts_run_below_the_gemm_efficiency_of_wide_ones(cat):
    """Tokens per expert set the grouped GEMM's tile waste: 128 narrow experts with few tokens each
    take longer per FLOP than 8 wide ones at the same active parameters."""
    accel, net = cat.accelerators["h100-sxm5-80gb"], cat.networks["ib-ndr400"]
    wl = Workload(seq_len=1024, global_batch=64)
    plan = PlanSpec(tp=1, pp=1, dp=8, cp=1, ep=8, vpp=1, micro_batch=1, zero_stage=1, recompute="none",
                    sequence_parallel=False, tp_comm_overlap=False, overlap_grad_reduce=True)
    narrow, wide = _moe(128, 8, 256), _moe(8, 1, 2048)
    assert active_param_count(narrow) == pytest.approx(active_param_count(wide), rel=0.01)   # but the router
    a, b = (estimate(m, accel, net, 8, wl, plan, knobs=load_knobs()) for m in (narrow, wide))
    assert a.terms["compute_s"] > b.terms["compute_s"]


def test_expert_parallel_may_fold_over_tensor_parallel_ranks(cat):
    """Megatron's parallel folding: Qwen3-235B with TP2 and EP32 on 256 GPUs (ep > dp x cp)."""
    arch = cat.models["qwen3-235b-a22b"]
    plan = PlanSpec(tp=2, pp=8, dp=16, cp=1, ep=32, vpp=4, micro_batch=1, zero_stage=1, recompute="selective",
                    sequence_parallel=True, tp_comm_overlap=False, overlap_grad_reduce=True, etp=1)
    # force-balanced, as the Model Zoo benchmarks this layout (a learned router's hot rank needs more)
    est = estimate(arch, cat.accelerators["h100-sxm5-80gb"], cat.networks["ib-ndr400"], 256,
                   Workload(seq_len=4096, global_batch=2048, moe_imbalance=1.0), plan, knobs=load_knobs())
    assert est.feasible and est.plan["ep"] == 32 and est.terms["ep_comm_s"] > 0
    layout = expert_layout(est.plan, 8)
    assert (layout["edp"], layout["ranks_per_domain"], layout["domains"]) == (1, 8, 4)


def test_the_search_explores_expert_layouts_and_keeps_ep_for_mixtral(cat):
    arch = cat.models["mixtral-8x22b"]
    est = estimate(arch, cat.accelerators["h100-sxm5-80gb"], cat.networks["ib-ndr400"], 256,
                   Workload(seq_len=4096, global_batch=1024, precision="fp8"), knobs=load_knobs(),
                   software=resolve_software("megatron-core", "0.16"))
    assert est.feasible and est.plan["ep"] > 1 and est.plan["moe_dispatcher"] == "hybridep"
    assert est.search["plans_evaluated"] > 1000


# ------------------------------------------------------------------------------ GPU counts


@pytest.mark.parametrize("batch", [2048, 8190])
def test_whole_rack_gb200_counts_are_quotable_with_idle_gpus_reported(cat, batch):
    """455 NVL72 racks = 32,760 GPUs = 2^3 x 3^2 x 5 x 7 x 13. A batch of 2,048 sequences splits
    over no data-parallel size that uses them all: the bid is still quoted, the plan leaves GPUs
    idle and says how many (here the fastest plan uses 16,384: 2,048 sequences cannot keep more
    busy). A batch of 8,190 = 2 x 4,095 sequences can use every GPU (dp 4,095 x tp 8)."""
    est = estimate(cat.models["llama3-70b"], cat.accelerators["gb200-nvl72-186gb"],
                   cat.networks["nvl72-ndr400"], 32_760, Workload(seq_len=8192, global_batch=batch),
                   knobs=load_knobs(), software=resolve_software("megatron-core", "0.16"))
    assert est.feasible
    used = est.plan["tp"] * est.plan["pp"] * est.plan["dp"] * est.plan["cp"]
    assert used + est.idle_gpus == 32_760 and batch % (est.plan["dp"] * est.plan["micro_batch"]) == 0
    assert (est.idle_gpus > 0) == (batch == 2048)


def test_uneven_dp_is_refused_naming_the_nearest_counts_that_work(cat):
    plan = PlanSpec(tp=4, pp=5, dp=1638, cp=1, ep=1, vpp=1, micro_batch=1, zero_stage=1, recompute="selective",
                    sequence_parallel=True, tp_comm_overlap=True, overlap_grad_reduce=True)
    est = estimate(cat.models["llama3-70b"], cat.accelerators["gb200-nvl72-186gb"],
                   cat.networks["nvl72-ndr400"], 32_760, Workload(seq_len=8192, global_batch=2048), plan,
                   knobs=load_knobs())
    assert not est.feasible
    assert "nearest counts that work are 20,480 GPUs (dp 1024) or 40,960 GPUs (dp 2048)" in est.reason


# ------------------------------------------------------------------------------ phases


def _case(step_times: list[float], tokens: list[float], gpus: int = 2048) -> BidCase:
    perfs = [replace(ex.performance(gpus, ex.H100_BF16_FLOPS), step_time_s=s) for s in step_times]
    phases = tuple(Phase(f"p{i}", p, t) for i, (p, t) in enumerate(zip(perfs[1:], tokens[1:]), start=1))
    return BidCase(id="b", vendor="v", performance=perfs[0], pricing=ex.rental("2.00"), commitment=Commitment(),
                   train_tokens=tokens[0], params=ex.PARAMS_70B, phases=phases)


@settings(max_examples=40, deadline=None)
@given(steps=st.lists(st.floats(1.0, 300.0), min_size=1, max_size=4),
       tokens=st.lists(st.floats(1e9, 1e13), min_size=4, max_size=4))
def test_a_workload_with_phases_costs_the_sum_of_its_phases(steps, tokens):
    tokens = tokens[:len(steps)]
    a = Assumptions(monte_carlo_samples=0)
    # the undiscounted basis adds up; on present value a later phase is discounted more
    whole = evaluate_core(_case(steps, tokens), a, "run")
    alone = [evaluate_core(_case([s], [t]), a, "run") for s, t in zip(steps, tokens)]
    assert whole.time_to_train_days == pytest.approx(sum(x.time_to_train_days for x in alone), rel=1e-12)
    # every cost line is a rate times billed hours (rounded up to 0.01 h, then to cents)
    slack = Decimal("0.01") * 2048 * Decimal("2.00") * len(steps) + Decimal("0.01") * len(steps) * 3
    assert abs(whole.total_cost - sum(x.total_cost for x in alone)) <= slack
    if len(steps) > 1:
        assert [p.name for p in whole.phases] == [f"p{i}" if i else "main" for i in range(len(steps))]


def test_an_infeasible_phase_makes_the_bid_infeasible_naming_it():
    case = _case([10.0, 20.0], [1e12, 1e11])
    bad = replace(case.phases[0].performance, feasible=False, infeasible_reason="no plan fits 80 GB")
    case = replace(case, phases=(replace(case.phases[0], performance=bad),))
    econ = evaluate_core(case, Assumptions(monte_carlo_samples=0))
    assert econ.total_cost is None and "infeasible" in econ.flag_codes


# ------------------------------------------------------------------------------ DeepSeek-V3


DEEPSEEK_PLAN = dict(tp=1, pp=16, ep=64, etp=1, vpp=1, micro_batch=1, zero_stage=1, recompute="selective",
                     sequence_parallel=False, tp_comm_overlap=False, overlap_grad_reduce=True, a2a_overlap=True,
                     moe_dispatcher="deepep", uneven_stages=True,
                     recompute_modules=("mla_up_proj", "layernorm", "moe_act"), pipeline_schedule="dualpipe")


def test_deepseek_v3_training_cost_is_reproduced_per_phase(cat):
    """DeepSeek-V3 Technical Report (arXiv 2412.19437) Table 1: 2,664K H800 GPU-hours of
    pre-training on 14.8T tokens and 119K for the two-stage context extension (1,000 steps at 32K
    x 1,920, then 1,000 at 128K x 480), on its 2,048-GPU cluster. From the preset and the published
    plan (sec. 3.2: PP16 DualPipe, EP64 over 8 nodes, no TP, ZeRO-1; recompute of RMSNorm and the
    MLA up-projections, sec. 3.3.3: of the SwiGLU output; fp8 GEMMs and fp8 dispatch; node-limited routing), as one workload with
    phases; the extension's CP is not published and the model's search chooses it. The stack is
    DeepSeek's own (catalog `hai-llm`), plus the context parallelism the extension needs."""
    arch, h800, net = cat.models["deepseek-v3"], cat.accelerators["h800-sxm-80gb"], cat.networks["ib-ndr400"]
    stack = resolve_software("hai-llm")
    stack = replace(stack, features=stack.features | {"cp", "cp_a2a"})
    phases = [("pretrain", 4096, 15360, 14.8e12, {"dp": 128, "cp": 1}),
              ("context-32k", 32768, 1920, 1000 * 1920 * 32768.0, {}),
              ("context-128k", 131072, 480, 1000 * 480 * 131072.0, {})]
    perfs = []
    for _name, seq, batch, _tokens, fixed in phases:
        wl = Workload(seq_len=seq, global_batch=batch, precision="fp8", fp8_dispatch=True)
        est = estimate(arch, h800, net, 2048, wl, PlanSpec(**DEEPSEEK_PLAN, **fixed), knobs=load_knobs(),
                       software=stack)
        assert est.feasible, est.reason
        modeled = Modeled(True, est.step_time_s, None, est.model_flops_per_step, est.hardware_flops_per_step,
                          dict(est.terms))
        perfs.append(performance(modeled, tokens_per_step=seq * batch, gpus=2048,
                                 peak_flops_per_gpu=h800.peak_flops("fp8")))
    case = BidCase(id="deepseek", vendor="DeepSeek", performance=perfs[0], pricing=ex.rental("2.00"),
                   commitment=Commitment(), train_tokens=phases[0][3], params=param_count(arch),
                   main_phase="pretrain",
                   phases=tuple(Phase(p[0], perf, p[3]) for p, perf in zip(phases[1:], perfs[1:])))
    econ = evaluate_core(case, Assumptions(monte_carlo_samples=0), "run")   # GPU-hours x price, undiscounted
    gpu_hours = {p.name: p.time_to_train_days * 24 * 2048 for p in econ.phases}
    assert gpu_hours["pretrain"] == pytest.approx(2_664_000, rel=0.10)
    extension = gpu_hours["context-32k"] + gpu_hours["context-128k"]
    assert extension == pytest.approx(119_000, rel=0.10)
    # the whole recipe costs what its phases cost: $2/GPU-hour as in the report's $5.576M
    assert float(econ.total_cost) == pytest.approx(2.0 * sum(gpu_hours.values()), rel=0.001)
    assert econ.time_to_train_days == pytest.approx(sum(p.time_to_train_days for p in econ.phases))


# ------------------------------------------------------------------------------ benchmark routers


def test_an_aligned_block_of_experts_touches_the_segments_it_straddles():
    from procure.model.expert import blocks_touched

    # DeepSeek-V3 top 8 on EP64 (4 experts a rank): two ranks; on 8-rank domains (32 experts): one
    assert blocks_touched(8, 4)[()] == pytest.approx(2.0) and blocks_touched(8, 32)[()] == pytest.approx(1.0)
    # Kimi K2 (384 experts, EP32: 12 a rank): a third of the blocks straddle a rank boundary
    assert blocks_touched(8, 12)[()] == pytest.approx(4.0 / 3.0)
    # blocks of 8 over segments of 3: 8/3 boundaries inside a block, none coinciding with its start
    assert blocks_touched(8, 3)[()] == pytest.approx(1.0 + 8.0 / 3.0 - 8.0 / 24.0)


@pytest.mark.parametrize("dedup", [0, 1])
def test_a_block_router_sends_fewer_copies_across_domains_only_under_a_deduplicating_dispatcher(cat, dedup):
    from procure.model.expert import remote_copies

    arch = cat.models["deepseek-v3"]
    h100, ib = cat.accelerators["h100-sxm5-80gb"], cat.networks["ib-ndr400"]
    learned, blocks = (build_problem(arch, h100, ib, 1024, Workload(seq_len=4096, global_batch=8192,
                                                                      moe_imbalance=1.0, moe_block_routing=b))
                       for b in (False, True))
    ep, g, k = 64.0, 8.0, 8.0
    (intra_l, inter_l), (intra_b, inter_b) = (remote_copies(pb, ep, g, k, dedup) for pb in (learned, blocks))
    if dedup:
        # a block of 8 experts sits on 2 ranks of one node: under one remote node per token on
        # average, where uniform top-8 routing reaches 4 (the group limit) of the 7 others
        assert float(inter_b) == pytest.approx(7.0 / 8.0) and float(inter_l) == pytest.approx(4.0 * 7.0 / 8.0)
        assert float(intra_b) < float(intra_l)
    else:
        assert (float(intra_b), float(inter_b)) == pytest.approx((float(intra_l), float(inter_l)))


def test_each_pipeline_flush_adds_a_fill_and_drain(cat):
    """NeMo AutoModel runs one pipeline schedule per gradient-accumulation step."""
    arch = cat.models["qwen3-30b-a3b"]
    plan = PlanSpec(tp=1, pp=4, dp=8, cp=1, ep=8, vpp=2, micro_batch=1, zero_stage=1, recompute="full",
                    sequence_parallel=False, tp_comm_overlap=False, overlap_grad_reduce=True)
    est = {n: estimate(arch, cat.accelerators["h100-sxm5-80gb"], cat.networks["ib-ndr400"], 32,
                       Workload(seq_len=4096, global_batch=256, pipeline_flushes=n), plan, knobs=load_knobs())
           for n in (1, 4)}
    assert est[1].terms["bubble_s"] > 0
    assert est[4].terms["bubble_s"] == pytest.approx(4 * est[1].terms["bubble_s"])
    assert est[4].terms["pp_comm_s"] > est[1].terms["pp_comm_s"]
    assert est[4].step_time_s > est[1].step_time_s


def test_the_default_moe_imbalance_is_the_fitted_one():
    """problem.DEFAULT_MOE_IMBALANCE ships what benchmarks/refit.py fitted (calibration.yaml)."""
    from procure.catalog.calibration import read_calibration
    from procure.resources import catalog_dir
    from procure.model.problem import DEFAULT_MOE_IMBALANCE

    fitted = read_calibration(catalog_dir() / "calibration.yaml").moe_imbalance
    assert fitted is not None and fitted.fitted_on and fitted.log_rms < 0.02
    assert DEFAULT_MOE_IMBALANCE == fitted.value
    from procure.inputs.schema import Workload as WorkloadSchema
    assert f"default {DEFAULT_MOE_IMBALANCE}" in WorkloadSchema.model_fields["moe_imbalance"].description


@SETTINGS
@given(low=st.floats(1.0, 2.0), more=st.floats(0.0, 1.5), ep=st.sampled_from([4, 8]),
       dispatcher=st.sampled_from(["alltoall", "deepep"]))
def test_a_less_even_router_never_makes_a_step_faster_or_smaller(low, more, ep, dispatcher):
    cat = default_catalog()
    accel, net = cat.accelerators["h100-sxm5-80gb"], cat.networks["ib-ndr400"]
    plan = PlanSpec(tp=1, pp=2, dp=8, cp=1, ep=ep, vpp=1, micro_batch=1, zero_stage=1, recompute="full",
                    sequence_parallel=False, tp_comm_overlap=False, overlap_grad_reduce=True,
                    moe_dispatcher=dispatcher)
    arch = _moe(64, 4, 768)
    a, b = (estimate(arch, accel, net, 16, Workload(seq_len=4096, global_batch=128, moe_imbalance=imb), plan,
                     knobs=load_knobs()) for imb in (low, low + more))
    assert b.step_time_s >= a.step_time_s * (1 - 1e-12)
    assert b.memory_gib["activations"] >= a.memory_gib["activations"] * (1 - 1e-12)
