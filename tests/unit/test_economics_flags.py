"""Flags: impossible, implausible, optimistic/conservative, deadline, infeasible, SLA, price."""

from __future__ import annotations

from dataclasses import replace

import pytest

from procure.economics import FLAG_CODES, Assumptions, Commitment, evaluate_core
from procure.economics.inputs import StepTimeError
from procure.economics import examples as ex
from procure.economics.flags import make_flag

A = Assumptions()


def flags_of(case):
    return {flag.code: flag for flag in evaluate_core(case, A).flags}


def committed_at_mfu(mfu: float, gpus: int = 4096, peak: float = ex.H100_BF16_FLOPS) -> float:
    return 6 * 70e9 * 16_777_216 / (gpus * peak * mfu)


def test_a_0_01_s_step_for_70b_on_4096_h100_is_impossible():
    found = flags_of(ex.case("fast", commitment=Commitment(step_time_s=0.01)))
    flag = found["impossible"]
    assert flag.severity == "error"
    assert flag.numbers["committed_s"] == 0.01
    assert flag.numbers["floor_s"] == pytest.approx(6 * 70e9 * 16_777_216 / (4096 * 989.4e12))
    assert "0.01 s" in flag.reason and "1.74 s" in flag.reason
    assert flag.numbers["implied_mfu"] > 1.0
    assert "implausible" not in found        # above the ceiling it is impossible, not merely implausible


def test_a_realistic_commitment_carries_no_flags():
    assert flags_of(ex.case("ok", commitment=Commitment(step_time_s=committed_at_mfu(0.42)))) == {}


def test_mfu_above_the_ceiling_is_implausible_but_possible():
    found = flags_of(ex.case("bold", commitment=Commitment(step_time_s=committed_at_mfu(0.7))))
    assert "impossible" not in found
    assert found["implausible"].severity == "warning"
    assert found["implausible"].numbers["implied_mfu"] == pytest.approx(0.7)
    assert "70% MFU" in found["implausible"].reason


@pytest.mark.parametrize("ratio, code", [(0.8, "optimistic"), (1.2, "conservative"),
                                         (0.9, None), (1.1, None)])
def test_committed_versus_modeled_beyond_tolerance(ratio, code):
    case = ex.case("v")
    committed = case.performance.modeled_step_time_s * ratio
    found = flags_of(ex.case("v", commitment=Commitment(step_time_s=committed)))
    present = {c for c in ("optimistic", "conservative") if c in found}
    assert present == ({code} if code else set())
    if code:
        assert found[code].numbers["deviation"] == pytest.approx(ratio - 1)
        assert "20%" in found[code].reason


def test_256_a100_miss_a_30_day_deadline_and_4096_h100_do_not():
    a100 = evaluate_core(ex.case("a100", gpus=256, peak_flops=ex.A100_BF16_FLOPS,
                                 train_tokens=1e12, deadline_days=30), A)
    h100 = evaluate_core(ex.case("h100", gpus=4096, train_tokens=1e12, deadline_days=30), A)
    assert "misses-deadline" in a100.flag_codes
    assert a100.time_to_train_days > 140           # 4.2e23 FLOPs at 40% of 256 × 312 TFLOP/s
    assert "misses-deadline" not in h100.flag_codes
    assert h100.time_to_train_days < 4
    flag = next(f for f in a100.flags if f.code == "misses-deadline")
    assert flag.numbers == {"time_to_train_days": a100.time_to_train_days, "deadline_days": 30,
                            "lead_time_days": 0.0, "days_to_finish": a100.time_to_train_days}


def test_infeasible_bid_has_no_time_or_cost():
    econ = evaluate_core(ex.case("oom", feasible=False, infeasible_reason="needs 97 GiB of 80"),
                         A)
    assert econ.flag_codes == ("infeasible",)
    assert econ.flags[0].severity == "error" and econ.flags[0].reason == "needs 97 GiB of 80"
    for key in ("throughput", "goodput", "time_to_train_days", "total_cost", "cost_per_million_tokens",
                "billed_hours", "energy_mwh"):
        assert getattr(econ, key) is None, key
    assert econ.cost_lines == () and econ.bases == ()


def test_infeasible_bid_still_shows_an_impossible_commitment():
    econ = evaluate_core(ex.case("x", feasible=False, commitment=Commitment(step_time_s=0.01)), A)
    assert econ.flag_codes[:1] == ("impossible",) and "infeasible" in econ.flag_codes


def test_price_missing_is_an_error_flag_and_the_bid_stays():
    econ = evaluate_core(ex.case("np", pricing=ex.rental(None, missing_reason="no h100 line")), A)
    assert econ.flag_codes == ("price-missing",)
    assert econ.flags[0].severity == "error" and econ.flags[0].reason == "no h100 line"
    assert econ.throughput is not None


def test_sla_breach_on_measured_p99_or_mean():
    commitment = Commitment(step_time_s=5.0, p99_step_time_s=6.0)
    breach_p99 = flags_of(ex.case("m", commitment=commitment, basis="measured",
                                  measured_mean_s=4.9, measured_p99_s=6.5))
    assert breach_p99["sla-breach"].numbers == {"measured_p99_s": 6.5, "committed_p99_s": 6.0}
    breach_mean = flags_of(ex.case("m", commitment=commitment, measured_mean_s=5.2,
                                   measured_p99_s=5.9))
    assert "mean 5.2 s" in breach_mean["sla-breach"].reason
    within = flags_of(ex.case("m", commitment=commitment, measured_mean_s=4.9, measured_p99_s=5.9))
    assert "sla-breach" not in within


def test_flags_come_in_code_order_with_known_codes_and_severities():
    econ = evaluate_core(ex.case("all", gpus=256, peak_flops=ex.A100_BF16_FLOPS, deadline_days=30,
                                 pricing=ex.rental(None),
                                 commitment=Commitment(step_time_s=0.01)), A)
    codes = econ.flag_codes
    assert codes == ("impossible", "optimistic", "misses-deadline", "price-missing")
    assert list(codes) == sorted(codes, key=FLAG_CODES.index)
    errors = {f.severity for f in econ.flags if f.code in ("impossible", "price-missing")}
    assert errors == {"error"}
    with pytest.raises(ValueError):
        make_flag("cheap", "not a flag")


# --- issue 12: flags that hold the line ---------------------------------------------------------

H100_GEMM_CEILING = 794.5 / 989.4           # measured bf16 matmul ceiling over peak (catalog)


def with_ceiling(commitment: Commitment, ceiling: float | None = H100_GEMM_CEILING):
    return ex.case("c", commitment=commitment, gemm_ceiling_mfu=ceiling)


def test_a_committed_scaling_efficiency_above_one_is_impossible():
    found = flags_of(ex.case("s", commitment=Commitment(scaling_efficiency=1.3)))
    assert found["impossible"].severity == "error"
    assert found["impossible"].numbers == {"committed_scaling_efficiency": 1.3}
    assert "above 1" in found["impossible"].reason
    assert "impossible" not in flags_of(ex.case("s", commitment=Commitment(scaling_efficiency=1.0)))


@pytest.mark.parametrize("mfu, code", [(0.98, "impossible"), (0.85, "impossible"), (0.75, "implausible"),
                                       (0.66, "implausible"), (0.6, None)])
def test_mfu_above_the_gemm_ceiling_is_impossible_and_between_the_record_and_it_implausible(mfu, code):
    found = flags_of(with_ceiling(Commitment(step_time_s=committed_at_mfu(mfu))))
    present = {c for c in ("impossible", "implausible") if c in found}
    assert present == ({code} if code else set())
    if code == "impossible":
        assert found[code].numbers["gemm_ceiling_mfu"] == pytest.approx(H100_GEMM_CEILING)
        assert found[code].numbers["implied_mfu"] == pytest.approx(mfu)
        assert "GEMM ceiling" in found[code].reason


def test_without_a_measured_ceiling_the_floor_is_100_percent_of_peak():
    assert "implausible" in flags_of(with_ceiling(Commitment(step_time_s=committed_at_mfu(0.98)), None))


def test_a_bid_delivered_after_the_deadline_minus_its_time_to_train_misses_it():
    base = evaluate_core(ex.case("d", deadline_days=60), A)
    days = base.time_to_train_days
    late = evaluate_core(replace(ex.case("d", deadline_days=60), lead_time_days=60 - days + 0.5), A)
    early = evaluate_core(replace(ex.case("d", deadline_days=60), lead_time_days=60 - days - 0.5), A)
    assert "misses-deadline" in late.flag_codes and "misses-deadline" not in early.flag_codes
    flag = next(f for f in late.flags if f.code == "misses-deadline")
    assert flag.numbers["days_to_finish"] == pytest.approx(60.5) and "available after" in flag.reason


def test_an_uncalibrated_accelerator_is_flagged_unless_measured():
    error = StepTimeError(calibrated=False, source="fallback: no fitted knobs")
    found = flags_of(ex.case("u", error=error))
    assert found["uncalibrated"].severity == "warning"
    assert found["uncalibrated"].numbers == {"sigma_log": A.step_time_sigma_uncalibrated}
    assert "uncalibrated" not in flags_of(ex.case("u", error=StepTimeError(calibrated=True)))
    assert "uncalibrated" not in flags_of(ex.case("u", error=error, basis="measured", measured_mean_s=4.0))
