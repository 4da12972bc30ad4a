"""Re-fit the per-accelerator knobs of the step-time model and write
``hardware_catalog/calibration.yaml`` (one command, deterministic output).

    python benchmarks/refit.py [--shared ../shared] [--check] [--all]

Default (issue 11): only the MoE knobs (grouped-GEMM scale, MoE host/sync overhead, all-to-all
overlap) are fitted, per group, on the fit split of published_runs/moe_longctx.yaml (MoE and
long-context families), on top of the shipped dense knobs, which stay as they are; the shipped
calibration.yaml is this mode's fixpoint. ``--all`` refits the dense knobs first as below (their
least-squares optimum moves with float-level changes of the model: the Ampere curve is flat in
places), then the MoE knobs.

Fitted ONLY on: ``published_runs/calibration.yaml`` and ``vtrain/ground_truth_single.csv`` (../shared)
and the runs of ``hardware_catalog/published_runs/*.yaml`` marked ``split: fit`` in the dense evaluation families
(MoE and long-context runs are issue 11's). The hold-out runs of the corpus, the multi-node vTrain
file and the older hold-out file of this folder are never read for fitting. Needs scipy (dev time
only; the runtime reads the YAML). Each group minimises the soft-L1 of log(predicted / measured),
every data source weighted to the same total so 1,440 vTrain runs do not drown 20 corpus runs.

Groups (accelerators sharing silicon share knobs):
- Ampere (A100 40/80 GB): the five GEMM-curve points, the memory-bound factor, the host launch
  overhead and the achieved scale-up / scale-out bandwidth (bounded to nccl-tests' 0.7-0.9).
- Hopper (H100, H200, H800): one shift of the Ampere curve along the ideal-time axis, the
  memory-bound factor, the fp8 GEMM scale, the DP/TP overlap efficiency and the scale-out factor.
- Blackwell (B200, GB200; B300 and GB300 take them unfitted): the share of the measured matmul
  ceiling reached, the fp8 scale and the memory-bound factor; the curve, the overlap efficiency
  and the link factors are Hopper's.
- CDNA3 (MI300X, MI325X; MI355X takes them unfitted, with its own ceiling): the share of the
  ceiling only (five fit runs, all the same fp8 LoRA workload: nothing else is separable); the
  rest is Hopper's.
Then the load imbalance of a learned dropless MoE router (shipped as
procure.model.problem.DEFAULT_MOE_IMBALANCE) is fitted on the fit runs published both
force-balanced and dropless, and every family's step-time error is written for the economics'
Monte Carlo and procure.model.step_time_band: its bias is the mean of log(measured / predicted)
over its fit runs; its spread is cross-validated by leaving one source family out at a time
(each fold refits every group with ``--all``'s procedure on the rest and predicts the left-out
source's runs), so the band is as wide as the error on a source the fit never saw. The RMS of the
per-source mean errors (``unseen_stack.sigma_log``) is added in quadrature for a bid whose stack
and release year no scored fit run used (``unseen_stack.fitted_stacks``).
"""

from __future__ import annotations

import argparse
import os
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from procure.backtest import Unpredictable, backtest, read_vtrain_csv, run_case, run_software  # noqa: E402
from procure.catalog.calibration import SCHEMA as CALIBRATION_SCHEMA, knobs_from_document  # noqa: E402
from procure.catalog.knobs import AccelKnobs, Knobs  # noqa: E402
from procure.catalog.load import default_catalog  # noqa: E402
from procure.catalog.software import stack_year  # noqa: E402
from procure.model.batch import case_knobs, evaluate_prepared, prepare  # noqa: E402
from procure.backtest.published_run import PublishedRun  # noqa: E402
from procure.backtest.runs import read_runs  # noqa: E402

FITTED_AT = "2026-12-01"                 # fixed for determinism (not the clock)
CORPUS = ROOT / "hardware_catalog" / "published_runs"
CORPUS_FILES = ("dense.yaml", "moe_longctx.yaml")
FIT_FAMILIES = ("dense-bf16-hopper", "fp8-hopper", "blackwell", "amd", "a100", "fsdp-zero3")
# Issue 11: the MoE knobs (grouped-GEMM scale, MoE host/sync overhead, all-to-all overlap) are
# fitted per group on the fit split's MoE and long-context runs, after the dense knobs, which
# they leave alone.
MOE_FAMILIES = ("moe", "long-context")
CURVE_T = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2)
# The largest GEMMs reach the measured matmul ceiling (that is what MAMF measures): the curve
# ends at 1.0 for a GEMM that takes 30 ms at peak.
CURVE_ANCHOR = (3e-2, 1.0)
GROUPS = {
    "ampere": ("a100-sxm4-80gb", "a100-sxm4-40gb"),
    "hopper": ("h100-sxm5-80gb", "h200-sxm-141gb", "h800-sxm-80gb"),
    "blackwell": ("b200-sxm-180gb", "gb200-nvl72-186gb"),
    "cdna3": ("mi300x-oam-192gb", "mi325x-oam-256gb"),
}
# Parts that take a group's knobs without runs of their own (fitted: false).
PROXIES = {"b300-sxm-288gb": "blackwell", "gb300-nvl72-288gb": "blackwell",
           "mi355x-oam-288gb": "cdna3", "h20-hgx-96gb": "hopper", "h100-nvl-94gb": "hopper",
           "h100-pcie-80gb": "hopper"}
# Priors of the knobs nobody fits, each with its source (written into calibration.yaml).
ATTENTION_RATIO = {
    "ampere": (0.74, "FlashAttention-2 paper (Dao 2023) fig. 4: ~200 TFLOP/s forward+backward at hd128, 16k, A100 (0.74 of the 271 TFLOP/s ceiling)"),
    "hopper": (0.675, "FlashAttention-3 paper (Shah et al. 2024) fig. 5-6, H100 SXM5 hd128 16k: cuDNN 595 fwd / 516 bwd TFLOP/s = 536 combined, 0.675 of the 794.5 ceiling"),
    "blackwell": (0.675, "no Blackwell attention measurement in the facts: Hopper's cuDNN ratio"),
    "cdna3": (0.70, "no CDNA3 attention measurement in the facts: prior between FA2 and cuDNN ratios"),
}
STEP_TIME_CV = 0.01                      # per-GPU step-time CV prior (not fitted)
SIGMA_FLOOR = 0.03                       # published step times themselves scatter by a few %


@dataclass
class Data:
    name: str                            # what it was fitted on (a file or a corpus source family)
    runs: list[PublishedRun]


def load_moe_data() -> list[Data]:
    """The fit split's MoE and long-context runs, one data set per source family."""
    corpus: dict[str, list[PublishedRun]] = {}
    for name in CORPUS_FILES:
        for run in read_runs(CORPUS / name):
            if run.split == "fit" and run.family in MOE_FAMILIES:
                corpus.setdefault(str(run.source_family), []).append(run)
    return [Data(f"corpus:{fam}", runs) for fam, runs in sorted(corpus.items())]


def load_fit_data(shared: Path) -> list[Data]:
    """Every fit data set; never a hold-out run (the corpus is filtered on split == fit)."""
    pub = read_runs(shared / "data/published_runs/calibration.yaml")
    single = read_vtrain_csv((shared / "data/published_runs/vtrain/ground_truth_single.csv")
                             .read_text(encoding="utf-8"), multi=False)
    out = [Data("published_runs/calibration.yaml", pub),
           Data("published_runs/vtrain/ground_truth_single.csv", single)]
    corpus: dict[str, list[PublishedRun]] = {}
    for name in CORPUS_FILES:
        for run in read_runs(CORPUS / name):
            if run.split == "fit" and run.family in FIT_FAMILIES:
                corpus.setdefault(str(run.source_family), []).append(run)
    out += [Data(f"corpus:{fam}", runs) for fam, runs in sorted(corpus.items())]
    return out


class Batch:
    """The fit runs of one accelerator group as one prepared evaluation."""

    def __init__(self, data: list[Data], ids: tuple[str, ...], accelerators: dict[str, Any]):
        cases, measured, weights, sources = [], [], [], []
        for d in data:
            mine = []
            for run in d.runs:
                if run.hardware.accelerator not in ids:
                    continue
                try:
                    case, _ = run_case(run, accelerators)
                except Unpredictable:
                    continue
                mine.append((case, float(run.measured.step_time_s)))
            for case, step in mine:
                cases.append(case)
                measured.append(step)
                weights.append(1.0 / len(mine))
                sources.append(d.name)
        self.cases = cases
        self.prep = prepare(cases)
        ok = np.array([r is None for r in self.prep.reasons])
        self.measured = np.array(measured)
        self.weights = np.array(weights) * ok / max(1e-12, float(np.sum(np.array(weights) * ok))) * ok.sum()
        self.sources = sorted(set(s for s, good in zip(sources, ok) if good))

    def predict(self, knobs: Knobs) -> np.ndarray:
        return evaluate_prepared(self.prep, case_knobs(self.cases, knobs))["step_time_s"]


def _fit(batch: Batch, to_knobs: Callable[[np.ndarray], Knobs], x0: list[float], lower: list[float],
         upper: list[float]) -> np.ndarray:
    from scipy.optimize import least_squares

    use = batch.weights > 0

    def resid(x: np.ndarray) -> np.ndarray:
        pred = batch.predict(to_knobs(np.asarray(x)))
        return (np.sqrt(batch.weights) * np.log(pred / batch.measured))[use]

    res = least_squares(resid, x0, bounds=(lower, upper), loss="soft_l1", f_scale=0.05,
                        x_scale="jac", max_nfev=300)
    return np.asarray(res.x)


def _monotone(points: list[tuple[float, float]]) -> tuple[tuple[float, float], ...]:
    fracs = np.minimum.accumulate(np.array([f for _, f in points])[::-1])[::-1]
    return tuple((t, float(f)) for (t, _), f in zip(points, fracs))


def _with(base: Knobs, ids: tuple[str, ...], k: AccelKnobs) -> Knobs:
    return replace(base, by_accelerator={**base.by_accelerator, **{i: k for i in ids}})


def fit_ampere(data: list[Data], cat: Any) -> AccelKnobs:
    batch = Batch(data, GROUPS["ampere"], cat.accelerators)
    names = [f"curve_{i}" for i in range(len(CURVE_T))] + ["membound", "launch_ms", "up", "out"]
    x0 = [min(1.0, 0.3 + 0.15 * i) for i in range(len(CURVE_T))] + [1.5, 0.8, 0.8, 0.8]
    lo = [0.1] * len(CURVE_T) + [0.3, 0.0, 0.7, 0.7]
    hi = [1.0] * len(CURVE_T) + [6.0, 3.0, 0.9, 0.9]

    def knobs(x: np.ndarray) -> AccelKnobs:
        v = dict(zip(names, x))
        pts = [(t, float(v[f"curve_{i}"])) for i, t in enumerate(CURVE_T)] + [CURVE_ANCHOR]
        return AccelKnobs(gemm_curve=_monotone(pts), membound_factor=float(v["membound"]),
                          launch_overhead_s=float(v["launch_ms"]) * 1e-3, scale_up_bw_eff=float(v["up"]),
                          scale_out_bw_eff=float(v["out"]), attention_ratio=ATTENTION_RATIO["ampere"][0],
                          # explicit, so the fit never depends on AccelKnobs' built-in defaults
                          gemm_top=None, overlap_efficiency=1.0, step_time_cv=STEP_TIME_CV,
                          fp8_gemm_scale=1.0, ceiling_scale=1.0)

    x = _fit(batch, lambda x: _with(Knobs(), GROUPS["ampere"], knobs(x)), x0, lo, hi)
    return replace(knobs(x), fitted=True, fitted_on=tuple(batch.sources),
                   sources=(ATTENTION_RATIO["ampere"][1],))


def fit_hopper(data: list[Data], cat: Any, ampere: AccelKnobs) -> AccelKnobs:
    batch = Batch(data, GROUPS["hopper"], cat.accelerators)

    def knobs(x: np.ndarray) -> AccelKnobs:
        shift = 10.0 ** float(x[0])      # the same curve, reached at shift x the ideal GEMM time
        return replace(ampere, gemm_curve=tuple((t * shift, f) for t, f in ampere.gemm_curve),
                       membound_factor=float(x[1]), fp8_gemm_scale=float(x[2]),
                       overlap_efficiency=float(x[3]), scale_out_bw_eff=float(x[4]),
                       attention_ratio=ATTENTION_RATIO["hopper"][0], fitted=False, fitted_on=(),
                       sources=())

    x = _fit(batch, lambda x: _with(Knobs(), GROUPS["hopper"], knobs(x)),
             [0.3, ampere.membound_factor, 1.0, 0.9, 0.85], [-1.0, 0.3, 0.5, 0.0, 0.7],
             [1.0, 6.0, 1.5, 1.0, 0.9])
    return replace(knobs(x), fitted=True, fitted_on=tuple(batch.sources),
                   sources=(ATTENTION_RATIO["hopper"][1],
                            "launch overhead, scale-up factor and curve shape: the Ampere fit"))


def fit_top_group(name: str, data: list[Data], cat: Any, base: AccelKnobs,
                  with_fp8_scale: bool) -> AccelKnobs:
    """Blackwell and CDNA3: the share of the measured ceiling reached (Blackwell also the fp8
    scale and the memory-bound factor)."""
    ids = GROUPS[name]
    batch = Batch(data, ids, cat.accelerators)
    if not batch.cases:              # a cross-validation fold that left out the group's only source
        return replace(base, fitted=False, fitted_on=(), sources=("no runs of its own: the Hopper fit",))

    def knobs(x: np.ndarray) -> AccelKnobs:
        return replace(base, ceiling_scale=float(x[0]),
                       membound_factor=float(x[1]) if with_fp8_scale else base.membound_factor,
                       fp8_gemm_scale=float(x[2]) if with_fp8_scale else 1.0,
                       attention_ratio=ATTENTION_RATIO[name][0], fitted=False, fitted_on=(), sources=())

    x0, lo, hi = [0.8], [0.2], [1.0]
    if with_fp8_scale:
        x0, lo, hi = x0 + [base.membound_factor, 1.0], lo + [0.3, 0.5], hi + [6.0, 1.5]
    x = _fit(batch, lambda x: _with(Knobs(), ids, knobs(x)), x0, lo, hi)
    return replace(knobs(x), fitted=True, fitted_on=tuple(batch.sources),
                   sources=(ATTENTION_RATIO[name][1],
                            "curve shape, launch overhead and link factors: the Hopper fit"))


# The MoE knobs' bounds: the grouped kernel keeps at most the plain GEMM's efficiency; the
# host/sync time of an MoE layer pass is a few kernel launches to a few milliseconds; the share
# of all-to-all an overlap schedule hides is between none and all.
MOE_X0, MOE_LO, MOE_HI = [0.85, 0.5, 0.7], [0.3, 0.0, 0.0], [1.0, 5.0, 1.0]


MOE_KEYS = ("grouped_gemm_scale", "moe_overhead_s", "a2a_overlap_efficiency")


def moe_ids(group: str) -> tuple[str, ...]:
    """A group's accelerators and the parts that take its knobs (B300/GB300 take Blackwell's)."""
    return GROUPS[group] + tuple(i for i, g in PROXIES.items() if g == group)


def fit_moe(data: list[Data], cat: Any, base: AccelKnobs, ids: tuple[str, ...]) -> AccelKnobs:
    """The MoE knobs of one group from its MoE/long-context fit runs (the dense knobs fixed)."""
    batch = Batch(data, ids, cat.accelerators)
    if not batch.cases:
        return base

    def knobs(x: np.ndarray) -> AccelKnobs:
        return replace(base, grouped_gemm_scale=float(x[0]), moe_overhead_s=float(x[1]) * 1e-3,
                       a2a_overlap_efficiency=float(x[2]))

    x = _fit(batch, lambda x: _with(Knobs(), ids, knobs(x)), MOE_X0, MOE_LO, MOE_HI)
    return replace(knobs(x), fitted_on=tuple(sorted(set(base.fitted_on) | set(batch.sources))))


def fit_moe_only(shared: Path) -> tuple[Knobs, list[Data], Any]:
    """Only the MoE knobs, on top of the shipped dense knobs (which stay as they are): the mode the
    shipped calibration.yaml was written in since issue 11 (see the module docstring)."""
    from procure.catalog.calibration import load_knobs

    cat = default_catalog()
    shipped = load_knobs()
    moe_data = load_moe_data()
    data = load_fit_data(shared) + moe_data
    by_id = dict(shipped.by_accelerator)
    fitted: dict[str, AccelKnobs] = {}
    for name in ("hopper", "blackwell"):
        ids = moe_ids(name) if name == "blackwell" else GROUPS[name]
        fitted[name] = fit_moe(moe_data, cat, shipped.for_accelerator(GROUPS[name][0]), ids)
    for accel_id, k in by_id.items():
        group = next((g for g, ids in GROUPS.items() if accel_id in ids), PROXIES.get(accel_id, "hopper"))
        src = fitted.get(group, fitted["hopper"])
        extra = tuple(s for s in src.fitted_on if s not in k.fitted_on) if group in fitted and k.fitted else ()
        by_id[accel_id] = replace(k, **{key: getattr(src, key) for key in MOE_KEYS},
                                  fitted_on=k.fitted_on + extra)
    default = replace(shipped.default, **{key: getattr(fitted["hopper"], key) for key in MOE_KEYS})
    knobs = Knobs(default=default, by_accelerator=by_id, fitted_on=tuple(d.name for d in data),
                  fitted_at=FITTED_AT)
    return knobs, data, cat


def fit(shared: Path) -> tuple[Knobs, list[Data], Any]:
    cat = default_catalog()
    data, moe_data = load_fit_data(shared), load_moe_data()
    return fit_on(data, moe_data, cat), data + moe_data, cat


def fit_on(data: list[Data], moe_data: list[Data], cat: Any) -> Knobs:
    """Every group's knobs from the dense and the MoE data sets given (``--all``; a cross-validation
    fold passes all but one source family)."""
    ampere = fit_ampere(data, cat)
    hopper = fit_hopper(data, cat, ampere)
    blackwell = fit_top_group("blackwell", data, cat, hopper, with_fp8_scale=True)
    cdna3 = fit_top_group("cdna3", data, cat, hopper, with_fp8_scale=False)
    hopper = fit_moe(moe_data, cat, hopper, GROUPS["hopper"])
    blackwell = fit_moe(moe_data, cat, blackwell, moe_ids("blackwell"))
    # Parts without MoE runs of their own take Hopper's MoE knobs.
    moe_knobs = {key: getattr(hopper, key) for key in MOE_KEYS}
    ampere = replace(ampere, **moe_knobs)
    cdna3 = replace(cdna3, **moe_knobs)
    fitted = {"ampere": ampere, "hopper": hopper, "blackwell": blackwell, "cdna3": cdna3}
    by_id = {i: fitted[g] for g, ids in GROUPS.items() for i in ids}
    for accel_id, group in PROXIES.items():
        by_id[accel_id] = replace(fitted[group], fitted=False, fitted_on=(),
                                  sources=fitted[group].sources + (
                                      f"no runs of its own: the {group} fit ({', '.join(GROUPS[group])})",))
    default = replace(hopper, fitted=False, fitted_on=(), sources=(
        "no runs of its own: the Hopper fit (the most-measured generation), its own matmul ceiling",))
    return Knobs(default=default, by_accelerator=by_id, fitted_on=tuple(d.name for d in data + moe_data),
                 fitted_at=FITTED_AT)


def imbalance_pairs(data: list[Data]) -> list[tuple[str, Any, float]]:
    """(run id, case, measured dropless / force-balanced step-time ratio) for every fit run of
    ``data`` published both ways (the Megatron MoE Model Zoo's Qwen3-235B long-context table)."""
    accelerators = default_catalog().accelerators
    pairs = []
    for run in (run for d in data for run in d.runs):
        measured = run.measured
        if run.split == "fit" and measured.dropless_model_tflops_per_gpu:
            if measured.model_tflops_per_gpu is None:
                raise ValueError(f"{run.id}: a dropless figure needs the force-balanced one beside it")
            case, _ = run_case(run, accelerators)
            ratio = float(measured.model_tflops_per_gpu) / float(measured.dropless_model_tflops_per_gpu)
            pairs.append((run.id, replace(case, workload=replace(case.workload, moe_imbalance=1.0)), ratio))
    return pairs


def fit_moe_imbalance(knobs: Knobs, data: list[Data]) -> dict[str, Any]:
    """The hot EP rank's load factor that makes the model's dropless / balanced step-time ratio
    match the published pairs (least squares in log; one number for every MoE plan)."""
    from scipy.optimize import minimize_scalar

    pairs = imbalance_pairs(data)
    balanced = [case for _, case, _ in pairs]
    measured = np.log([ratio for _, _, ratio in pairs])
    base = evaluate_prepared(prepare(balanced), case_knobs(balanced, knobs))["step_time_s"]

    def resid(x: float) -> np.ndarray:
        hot = [replace(c, workload=replace(c.workload, moe_imbalance=float(x))) for c in balanced]
        return np.log(evaluate_prepared(prepare(hot), case_knobs(hot, knobs))["step_time_s"] / base) - measured

    x = round(float(minimize_scalar(lambda v: float(np.sum(resid(v) ** 2)), bounds=(1.0, 4.0),
                                    method="bounded", options={"xatol": 1e-4}).x), 2)
    ids = sorted(run_id for run_id, _, _ in pairs)
    families = sorted({str(run.source_family) for d in data for run in d.runs if run.id in ids})
    return {"value": x, "fitted_on": [f"corpus:{family} ({len(pairs)} force-balanced/dropless pairs, "
                                      f"{', '.join(ids)})" for family in families],
            "log_rms": round(float(np.sqrt(np.mean(resid(x) ** 2))), 4)}


def _sig(x: float, digits: int = 4) -> float:
    return float(f"{x:.{digits}g}")


def _block(k: AccelKnobs) -> dict[str, Any]:
    return {
        "gemm_top": None if k.gemm_top is None else round(k.gemm_top, 4),
        "gemm_curve": [[_sig(t), round(f, 4)] for t, f in k.gemm_curve],
        "membound_factor": round(k.membound_factor, 4),
        "launch_overhead_s": _sig(k.launch_overhead_s),
        "scale_up_bw_eff": round(k.scale_up_bw_eff, 4),
        "scale_out_bw_eff": round(k.scale_out_bw_eff, 4),
        "overlap_efficiency": round(k.overlap_efficiency, 4),
        "step_time_cv": k.step_time_cv,
        "attention_ratio": round(k.attention_ratio, 4),
        "fp8_gemm_scale": round(k.fp8_gemm_scale, 4),
        "ceiling_scale": round(k.ceiling_scale, 4),
        "grouped_gemm_scale": round(k.grouped_gemm_scale, 4),
        "moe_overhead_s": _sig(k.moe_overhead_s),
        "a2a_overlap_efficiency": round(k.a2a_overlap_efficiency, 4),
        "fitted": k.fitted,
        "fitted_on": list(k.fitted_on),
        "sources": list(k.sources),
    }


def source_family(data: Data, run: PublishedRun) -> str:
    """The source family a fit run comes from: each corpus data set is one; the shared calibration
    file holds three lineages (Narayanan et al. 2021 table 1, the Megatron-LM README's 2020 and
    2024 tables), named by the first two parts of their ids."""
    return data.name if data.name.startswith("corpus:") else "_".join(run.id.split("_")[:2])


def _scored(data: list[Data]) -> list[Data]:
    """The data sets whose runs the errors are measured on (vTrain's 1,440 single-node fp16 runs of
    2021-era software would set the A100 spread alone: fitted on, never scored)."""
    return [d for d in data if "vtrain" not in d.name]


def _log_errors(runs: list[PublishedRun], knobs: Knobs, cat: Any) -> list[tuple[str, float]]:
    """(evaluation family, log(measured / predicted)) of every run the model can predict."""
    result = backtest(runs, cat.accelerators, knobs=knobs, check_memory=False)
    return [(str(row["family"]), -math.log1p(row["error"])) for row in result["runs"] if row["error"] is not None]


def cross_validated(data: list[Data], cat: Any) -> dict[str, list[tuple[str, float]]]:
    """Per evaluation family, (source family, log error) of each fit run predicted by knobs fitted
    WITHOUT its source family (``--all``'s procedure on the rest; a group left without runs takes
    the Hopper fit, as a part with no runs of its own does)."""
    moe = [d for d in data if d.runs and all(r.family in MOE_FAMILIES for r in d.runs)]
    dense = [d for d in data if d not in moe]
    folds = sorted({source_family(d, r) for d in _scored(data) for r in d.runs})
    out: dict[str, list[tuple[str, float]]] = {}
    for fold in folds:
        knobs = fit_on(_without(dense, fold), _without(moe, fold), cat)
        left_out = [r for d in _scored(data) for r in d.runs if source_family(d, r) == fold]
        for fam, err in _log_errors(left_out, knobs, cat):
            out.setdefault(fam, []).append((fold, err))
    return out


def _without(sets: list[Data], fold: str) -> list[Data]:
    return [Data(d.name, [r for r in d.runs if source_family(d, r) != fold]) for d in sets]


def _rms(values: list[float]) -> float:
    return math.sqrt(float(np.mean(np.square(values))))


def between_source_spread(held: dict[str, list[tuple[str, float]]]) -> float:
    """RMS of the per-source mean errors over the families with two or more source families: how
    far, on average, a source the fit never saw lands."""
    means = [float(np.mean([e for f, e in rows if f == fold]))
             for rows in held.values() for fold in sorted({f for f, _ in rows}) if len({f for f, _ in rows}) > 1]
    return _rms(means) if means else 0.0


def fitted_stacks(data: list[Data]) -> list[str]:
    """'<stack> <release year>' of every scored fit run that states its software."""
    return sorted({stack_year(sw) for d in _scored(data) for r in d.runs if (sw := run_software(r)) is not None})


def step_time_errors(knobs: Knobs, data: list[Data], cat: Any,
                     held: dict[str, list[tuple[str, float]]]) -> dict[str, dict[str, Any]]:
    """Per evaluation family: the bias is the mean of log(measured / predicted) over its fit runs
    (the shipped knobs' own residuals centre the band); the spread is how far a run from a source
    family the fit never saw lands: the RMS of the leave-one-source-family-out errors when the
    family's runs come from two or more source families, else its own spread combined with the
    RMS of the per-source mean errors of the families that have two or more. Either is the
    prediction spread of a new run, x sqrt(1 + 1/n), never below SIGMA_FLOOR."""
    own: dict[str, list[float]] = {}
    for d in _scored(data):
        for fam, err in _log_errors(d.runs, knobs, cat):
            own.setdefault(fam, []).append(err)
    between = between_source_spread(held)
    out = {}
    for fam, values in sorted(own.items()):
        v, n = np.array(values), len(values)
        folds = {f for f, _ in held.get(fam, [])}
        if len(folds) > 1:
            width = _rms([e for _, e in held[fam]])
        else:
            spread = float(np.std(v, ddof=1)) if n > 1 else 0.0
            width = math.hypot(spread, between)
        out[fam] = {"bias": round(float(np.mean(v)), 4),
                    "sigma_log": round(max(SIGMA_FLOOR, width * math.sqrt(1.0 + 1.0 / n)), 4), "n": n,
                    "source_families": len(folds)}
    return out


def document(knobs: Knobs, data: list[Data], cat: Any) -> dict[str, Any]:
    """The YAML document, with the MAPE of the rounded knobs on each data set fitted on."""
    doc: dict[str, Any] = {
        "schema": CALIBRATION_SCHEMA,
        "fitted_on": list(knobs.fitted_on),
        "fitted_at": knobs.fitted_at,
        "fit_mape": {},
        "notes": "Written by benchmarks/refit.py from the fit split only. gemm_curve: [ideal GEMM "
                 "seconds at peak, fraction of gemm_top]; gemm_top null = measured matmul ceiling / "
                 "peak. fitted: false = no runs of its own (its knobs are a fitted group's or the "
                 "default). step_time_errors: bias = mean log(measured / predicted) over each family's fit runs; "
                 "sigma_log = the spread of a run from a source family the fit never saw (leave-one-source-"
                 "family-out cross-validation, see source_families).",
        "default": _block(knobs.default),
        "accelerators": {i: _block(k) for i, k in sorted(knobs.by_accelerator.items())},
    }
    rounded = knobs_from_document(doc)
    for d in data:
        result = backtest(d.runs, cat.accelerators, knobs=rounded, check_memory=False)
        if result["mape"] is not None:
            doc["fit_mape"][d.name] = round(float(result["mape"]), 4)
    held = cross_validated(data, cat)
    doc["step_time_errors"] = step_time_errors(rounded, data, cat, held)
    doc["unseen_stack"] = {"sigma_log": round(between_source_spread(held), 4), "fitted_stacks": fitted_stacks(data)}
    doc["moe_imbalance"] = fit_moe_imbalance(rounded, data)
    return doc


def main(argv: list[str] | None = None) -> int:
    import yaml

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=Path(os.environ.get("PROCURE_SHARED") or ROOT.parent / "shared"))
    ap.add_argument("--check", action="store_true", help="fit and print, do not write")
    ap.add_argument("--all", action="store_true",
                    help="refit the dense knobs too (default: only the MoE knobs on the shipped dense ones)")
    args = ap.parse_args(argv)
    doc = document(*(fit(args.shared) if args.all else fit_moe_only(args.shared)))
    text = yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=100)
    out = ROOT / "hardware_catalog" / "calibration.yaml"
    if args.check:
        print(text)
    else:
        out.write_text("# Fitted step-time knobs; regenerate with: python benchmarks/refit.py\n" + text,
                       encoding="utf-8")
        print(f"wrote {out}: fit MAPE {doc['fit_mape']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
