"""The software stack as an input: the catalog, its resolution, and a search that never proposes
what the stack cannot run."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

import pytest

from procure.catalog.load import default_catalog
from procure.catalog.software import (FEATURES, load_software, resolve_software, software_for)
from procure.model import PlanSpec, Workload, estimate

try:
    from test_model_fixtures import NDR, gpt
except ImportError:  # pragma: no cover
    from .test_model_fixtures import NDR, gpt

CAT = default_catalog()
H100 = CAT.accelerators["h100-sxm5-80gb"]
B200 = CAT.accelerators["b200-sxm-180gb"]
A100 = CAT.accelerators["a100-sxm4-80gb"]
MI300X = CAT.accelerators["mi300x-oam-192gb"]
ARCH = gpt(32, 4096, 32, vocab=128256, kv_heads=8, ffn=14336, gated=True)
WL = Workload(seq_len=8192, global_batch=512)


def test_every_release_is_sourced_dated_and_uses_known_features():
    catalog = load_software()
    assert {"megatron-core", "nemo", "megatron-bridge", "torchtitan", "deepspeed"} <= set(catalog)
    for releases in catalog.values():
        dates = [r.released for r in releases]
        assert dates == sorted(dates)
        for rel in releases:
            assert rel.sourced.source and all(s.strip() for s in rel.sourced.source)
            assert rel.features <= set(FEATURES)


def test_resolution_by_version_date_and_vendor():
    assert resolve_software("megatron-lm", "0.9").label == "megatron-core 0.9"
    assert resolve_software("nemo", when="2024-12").version == "24.09"
    assert resolve_software("torchtitan", when=date(2024, 9, 1)).version == "2024.07"
    assert resolve_software(None, when="2026-11-01", accel=MI300X).stack == "primus"
    assert resolve_software(None, when="2026-11-01", accel=H100).stack == "megatron-core"
    with pytest.raises(ValueError, match="no release"):
        resolve_software("nemo", "99.99")


def test_bid_software_overrides_the_workload_and_as_of_dates_it():
    class Spec:
        def __init__(self, stack=None, version=None, date=None):
            self.stack, self.version, self.date = stack, version, date

    assert software_for(None, Spec("torchtitan"), "2025-01-15", H100).version == "2024.10"
    assert software_for(Spec("deepspeed"), Spec("torchtitan"), "2025-01-15", H100).stack == "deepspeed"
    assert software_for(Spec(date="2024-01"), Spec("nemo"), "2026-11-01", H100).version == "23.05"


def _search(software, precision="bf16", accel=H100, plan=None):
    return estimate(ARCH, accel, NDR, 512, replace(WL, precision=precision), plan, software=software)


@pytest.mark.parametrize("stack,when,forbidden", [
    ("torchtitan", "2024-08", {"zero_stage": {1, 2}, "cp": lambda c: c > 1}),
    ("deepspeed", "2024-04", {"tp_comm_overlap": {True}}),
    ("megatron-core", "2023-06", {"tp_comm_overlap": {True}, "cp": lambda c: c > 1,
                                  "overlap_grad_reduce": {True}}),
    ("other", "2024-01", {"cp": lambda c: c > 1, "tp_comm_overlap": {True}}),
])
def test_the_search_never_proposes_what_the_stack_cannot_run(stack, when, forbidden):
    est = _search(resolve_software(stack, when=when))
    assert est.feasible
    for plan in [est.plan] + [r["plan"] for r in est.runners_up]:
        for key, bad in forbidden.items():
            value = plan[key]
            assert not (bad(value) if callable(bad) else value in bad), (stack, key, value)
    assert est.software.stack == ("megatron-core" if stack == "megatron-lm" else stack)


def test_a_fixed_plan_the_stack_cannot_run_is_infeasible_with_the_reason():
    plan = PlanSpec(tp=8, pp=1, dp=64, cp=1, ep=1, vpp=1, micro_batch=1, zero_stage=1, recompute="none",
                    sequence_parallel=True, tp_comm_overlap=True, overlap_grad_reduce=True)
    est = _search(resolve_software("deepspeed", "0.14"), plan=plan)
    assert not est.feasible and "cannot run" in est.reason and "TP comm overlap" in est.reason


def test_fp8_needs_a_recipe_for_the_part():
    est = _search(resolve_software("megatron-core", "0.16"), precision="fp8", accel=A100)
    assert not est.feasible and "fp8" in est.reason
    assert _search(resolve_software("megatron-core", "0.16"), precision="fp8", accel=B200).feasible


def test_the_stack_attention_kernel_changes_long_sequence_time():
    wl = Workload(seq_len=32768, global_batch=64)
    plan = PlanSpec(tp=4, pp=1, dp=16, cp=8, ep=1, vpp=1, micro_batch=1, zero_stage=3, recompute="none",
                    sequence_parallel=True, tp_comm_overlap=True, overlap_grad_reduce=True)
    fa2 = estimate(ARCH, H100, NDR, 512, wl, plan, software=resolve_software("torchtitan", "2024.10"))
    cudnn = estimate(ARCH, H100, NDR, 512, wl, plan, software=resolve_software("torchtitan", "2025.03"))
    assert fa2.feasible and cudnn.feasible
    assert fa2.terms["compute_s"] > 1.2 * cudnn.terms["compute_s"]


def test_cluster_yaml_software_is_validated_with_positions(tmp_path):
    from procure.errors import InputError
    from procure.inputs.schema import Cluster
    from procure.sources.validate import validate_document
    from procure.sources.yamlpos import parse_yaml_text

    text = """schema: procure/v1
title: t
as_of: 2026-11-01
workload: {model: llama3-8b, seq_len: 8192, global_batch: 512, train_tokens: 1.0e12,
           software: {stack: nemoo}}
bids:
- id: a
  vendor: v
  accelerator: h100-sxm5-80gb
  gpus: 64
  pricing: {usd_per_gpu_hour: 2}
  software: {stack: nemo, version: "99.1"}
"""
    doc = parse_yaml_text(text, "cluster.yaml")
    with pytest.raises(InputError) as info:
        validate_document(doc, Cluster)
    found = {(d.line, d.message.split(":")[0]) for d in info.value.diagnostics}
    assert any(line == 5 for line, _ in found) and any(line == 12 for line, _ in found), found
    assert any("did you mean 'nemo'" in d.message for d in info.value.diagnostics)


def test_a_date_before_the_stacks_first_release_is_an_error_naming_what_exists(tmp_path):
    # Issue 27: a 2021 run on NeMo silently took its first catalogued release (2022).
    from procure.errors import InputError
    from procure.inputs.schema import Cluster
    from procure.sources.validate import validate_document
    from procure.sources.yamlpos import parse_yaml_text

    text = """schema: procure/v1
title: t
as_of: 2026-11-01
workload: {model: llama3-8b, seq_len: 8192, global_batch: 512, train_tokens: 1.0e12,
           software: {stack: nemo, date: 2021-06}}
bids:
- id: a
  vendor: v
  accelerator: h100-sxm5-80gb
  gpus: 64
  pricing: {usd_per_gpu_hour: 2}
  software: {stack: torchtitan, date: 2024-01}
"""
    doc = parse_yaml_text(text, "cluster.yaml")
    with pytest.raises(InputError) as info:
        validate_document(doc, Cluster)
    messages = {d.line: d.message for d in info.value.diagnostics}
    assert "nemo has no release on or before 2021-06" in messages[5]
    assert "released 2022-09-01" in messages[5]
    assert "stacks released by then: megatron-core" in messages[5]
    # torchtitan's first release is 2024-07; by 2024-01 other stacks existed, and are named
    assert "torchtitan has no release on or before 2024-01" in messages[12]
    assert "megatron-core" in messages[12] and "deepspeed" in messages[12]


def test_megatron_lm_releases_of_2020_to_2022_carry_their_features():
    """Issue 27 item 4: a 2021 Megatron-LM run gets v2.x (pipeline, no sequence parallelism, no
    selective recompute, unfused attention), not the 2023 release."""
    old = resolve_software("megatron-lm", when=date(2021, 10, 1))
    assert old.version == "v2.5" and old.attention_kernel == "unfused"
    assert old.has("interleaved_pp") and not old.has("sequence_parallel") and not old.has("selective_recompute")
    assert resolve_software("megatron-core", when=date(2022, 6, 1)).has("selective_recompute")
    assert resolve_software("megatron-core", when=date(2023, 6, 1)).version == "23.04"


def test_deepspeed_releases_of_2020_to_2022_carry_their_features():
    assert not resolve_software("deepspeed", when=date(2020, 12, 1)).has("zero3")
    old = resolve_software("deepspeed", when=date(2021, 6, 1))
    assert old.has("zero3") and old.attention_kernel == "unfused" and not old.has("selective_recompute")
    assert resolve_software("deepspeed", when=date(2023, 2, 1)).version == "0.8"


def test_metaseq_and_llm_foundry_carry_their_dated_features_and_kernels():
    """Issue 27 item 4: the stacks of OPT (metaseq) and of MosaicML's MPT runs (LLM Foundry)."""
    opt = resolve_software("metaseq", when=date(2022, 6, 1))
    assert opt.version == "2022.05" and opt.attention_kernel == "unfused"
    assert opt.has("tp") and opt.has("zero3") and not opt.has("pp")
    assert resolve_software("metaseq", when=date(2022, 12, 1)).attention_kernel == "fa1"
    assert resolve_software("llm-foundry", when=date(2023, 6, 1)).attention_kernel == "fa1"
    assert resolve_software("llm-foundry", when=date(2024, 1, 1)).attention_kernel == "fa2"
    assert not resolve_software("llm-foundry", when=date(2024, 1, 1)).has("tp")


def test_flashattention_1_runs_at_half_the_throughput_of_flashattention_2():
    from procure.model.attention import kernel_factor

    assert kernel_factor("fa1", A100) == 0.5 and kernel_factor("fa2", A100) == 1.0
    assert kernel_factor("fa1", H100) == pytest.approx(0.5 * kernel_factor("fa2", H100))


def test_a_quoted_bid_on_a_stack_without_a_fused_kernel_materialises_the_scores(tmp_path):
    """The quote path, not only the backtest: a bid on Megatron-LM of 2021 (unfused attention) is
    timed with the full s x s scores, slower than the same plan on a 2023 release."""
    from procure.catalog.calibration import load_knobs
    from procure.inputs.bundle import load_inputs
    from procure.pipeline import estimate_bid, software

    def step(stack: str, when: str) -> float:
        path = tmp_path / f"{stack}-{when}.yaml"
        path.write_text(f"""schema: procure/v1
title: t
as_of: 2026-11-01
workload: {{model: llama3-8b, seq_len: 8192, global_batch: 256, train_tokens: 1.0e12}}
bids:
- id: a
  vendor: v
  accelerator: a100-sxm4-80gb
  gpus: 64
  pricing: {{usd_per_gpu_hour: 2}}
  software: {{stack: {stack}, date: {when}}}
  plan: {{tp: 8, pp: 1, dp: 8, micro_batch: 1, zero_stage: 0, recompute: full, sequence_parallel: false}}
""", encoding="utf-8")
        inputs = load_inputs(path)
        est = estimate_bid(inputs, inputs.bids[0], software(inputs, inputs.bids[0]), None, load_knobs())
        assert est.feasible, est.reason
        return float(est.step_time_s)

    assert step("megatron-lm", "2021-10") > 1.05 * step("megatron-core", "2023-06")
