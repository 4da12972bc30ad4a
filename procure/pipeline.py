"""The quote pipeline: per-bid performance (model or measurement) and economics, assembled into
the one versioned result document ``procure.quote/v1`` (see docs/result-document.md).

I/O stays at the edges: measured logs are read through ``procure.measure`` (its reader module),
the clock is read only to report how long the plan search took.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from procure import __version__

CHECKPOINT_NOTE = "checkpoint writes are charged in goodput (lost fraction), not in io_s"
MFU_CONVENTION = "model FLOPs (non-causal attention, as Megatron/PaLM count) over dense peak at the workload precision"


@dataclass
class Measured:
    summary: dict | None         # mean, p50, p95, p99, max, std, cv, count
    histogram: dict | None
    busbw_gbs: float | None
    sources: list[dict]
    gpus: int | None = None      # the largest GPU count a source states
    busbw_nodes: int | None = None  # hosts the nccl-tests run spanned, when it printed them
    scale_out_gbs: float | None = None  # the bus bandwidth the model uses for the inter-node tier
    busbw_note: str | None = None       # why it is (not) used


# A node's scale-out rate, as nccl-tests reports it for a multi-node all-reduce, shared by its
# GPUs, cannot much exceed the NICs; a figure far above them was measured inside one node (NVLink).
SCALE_OUT_PLAUSIBLE_FACTOR = 1.25


def scale_out_busbw(measured: Measured, rb) -> tuple[float | None, str | None]:
    """The nccl-tests bus bandwidth to use for the bid's inter-node tier, with why (not) in a note."""
    if not measured.busbw_gbs:
        return None, None
    per_gpu = measured.busbw_gbs / max(1, rb.accelerator.scale_up_domain)
    nic = rb.network.scale_out_bw_gbs
    if measured.busbw_nodes == 1:
        return None, (f"nccl-tests bus bandwidth {measured.busbw_gbs:.1f} GB/s was measured on one host: "
                      "a scale-up figure, not used for the inter-node tier")
    multi_node = (measured.busbw_nodes or 0) > 1 or (measured.gpus or 0) > rb.accelerator.scale_up_domain
    if multi_node or per_gpu <= SCALE_OUT_PLAUSIBLE_FACTOR * nic:
        return measured.busbw_gbs, (f"nccl-tests bus bandwidth {measured.busbw_gbs:.1f} GB/s "
                                    f"({per_gpu:.1f} GB/s per GPU) replaces the catalog's {nic:.1f} GB/s "
                                    "per GPU for the inter-node tier")
    return None, (f"nccl-tests bus bandwidth {measured.busbw_gbs:.1f} GB/s is {per_gpu / nic:.1f}× the "
                  f"{rb.network.id} NIC rate per GPU: a single-node (scale-up) measurement, not used "
                  "for the inter-node tier")


def measure_bid(rb) -> Measured | None:
    if not rb.measured_paths:
        return None
    from procure.measure import ingest

    result = ingest(list(rb.measured_paths))
    as_dict = result.to_dict()
    sources = [{"path": Path(s["path"]).name, "format": s["format"], "steps": s["steps"],
                "warmup_excluded": s["warmup_excluded"], "aggregation": s.get("aggregation")}
               for s in as_dict["sources"]]
    gpus = max((s["gpus"] for s in as_dict["sources"] if s.get("gpus")), default=None)
    nodes = max(((s.get("bus_bandwidth") or {}).get("nodes") or 0 for s in as_dict["sources"]), default=0)
    measured = Measured(result.step_time_summary(), result.histogram(), result.busbw_gbs(), sources, gpus,
                        nodes or None)
    measured.scale_out_gbs, measured.busbw_note = scale_out_busbw(measured, rb)
    return measured


def model_workload(inputs):
    from procure.model import Workload

    w = inputs.cluster.workload
    return Workload(seq_len=w.seq_len, global_batch=w.global_batch_seqs, precision=w.precision)


def plan_spec(bid):
    from procure.model import PlanSpec

    if bid.plan == "auto":
        return None
    return PlanSpec(**bid.plan.model_dump())


def estimate_bid(inputs, rb, measured: Measured | None):
    from procure.catalog.calibration import load_knobs
    from procure.model import estimate

    # The straggler term needs the per-GPU variation. A log's step-time CV is the job's (already the
    # max over GPUs), so feeding it back would count the tail twice: only the assumption overrides.
    cv = inputs.cluster.assumptions.step_time_cv
    start = time.perf_counter()
    est = estimate(inputs.arch, rb.accelerator, rb.network, rb.bid.gpus, model_workload(inputs),
                   plan=plan_spec(rb.bid), knobs=load_knobs(),
                   measured_busbw_gbs=measured.scale_out_gbs if measured else None, step_time_cv=cv,
                   elapsed_s=None)
    if est.search is not None and est.search.get("seconds") is None:
        est.search["seconds"] = round(time.perf_counter() - start, 4)
    return est


def run_backtest(path: Path) -> dict:
    from procure.backtest import backtest, read_vtrain_csv
    from procure.catalog.calibration import load_knobs
    from procure.catalog.load import default_catalog
    from procure.errors import input_error
    from procure.sources.files import decode_utf8, read_bytes_limited
    from procure.sources.yamlpos import plain, read_yaml

    cat = default_catalog()
    if path.suffix.lower() == ".csv":
        text = decode_utf8(read_bytes_limited(path, str(path)), str(path))
        runs = read_vtrain_csv(text, multi="multi" in path.name or "Parameters" in text.splitlines()[0])
    else:
        data = plain(read_yaml(path).data)
        if not isinstance(data, dict) or data.get("schema") != "procure.published-runs/v1":
            raise input_error(str(path), "bad-schema", "expected `schema: procure.published-runs/v1`")
        runs = data.get("runs") or []
    result = backtest(runs, cat.accelerators, knobs=load_knobs())
    if any(run.get("group") for run in result["runs"]):
        from procure.backtest import spearman_by_group

        result["spearman"] = spearman_by_group(result)   # ranking fidelity within (model, GPUs, batch)
    return result


# ---------------------------------------------------------------------------------------------
# economics inputs


def _performance(inputs, rb, est, measured: Measured | None):
    from procure.economics.inputs import Performance

    w = inputs.cluster.workload
    peak = rb.accelerator.peak_flops(w.precision)
    use_measured = bool(measured and measured.summary and measured.summary.get("mean"))
    modeled = est.step_time_s if est.feasible else None
    step = float(measured.summary["mean"]) if use_measured else (modeled or 0.0)
    terms = dict(est.terms) if est.feasible else {}
    return Performance(
        step_time_s=step, step_time_terms=terms,
        p99_step_time_s=(float(measured.summary["p99"]) if use_measured
                         else (est.percentiles_s or {}).get("p99")),
        tokens_per_step=w.tokens_per_step, gpus=rb.bid.gpus, model_flops_per_step=est.model_flops_per_step,
        hardware_flops_per_step=est.hardware_flops_per_step, peak_flops_per_gpu=peak,
        modeled_step_time_s=modeled, feasible=est.feasible or use_measured,
        infeasible_reason=None if (est.feasible or use_measured) else est.reason,
        basis="measured" if use_measured else "modeled",
        measured_mean_s=float(measured.summary["mean"]) if use_measured else None,
        measured_p99_s=float(measured.summary["p99"]) if use_measured else None)


def _pricing(inputs, rb):
    from procure.economics.inputs import Pricing

    choice = rb.price
    ccy = inputs.cluster.currency
    fx = choice.fx_rate
    tdp = rb.accelerator.tdp_w
    if choice.book is None:
        return Pricing(kind=choice.kind, currency=ccy, price_per_gpu_hour=choice.inline_price, tdp_w=tdp)
    book, line = choice.book, choice.line
    if line is None:
        return Pricing(kind=choice.kind, currency=ccy, price_per_gpu_hour=None, tdp_w=tdp,
                       missing_reason=choice.missing_reason)
    conv = (lambda v: None if v is None else v * fx)
    if choice.kind == "purchase":
        return Pricing(kind="purchase", currency=ccy, price_per_gpu_hour=None,
                       capex_per_gpu=conv(line.capex_per_gpu), network_capex_per_gpu=conv(line.network_capex_per_gpu),
                       life_years=line.life_years, residual_fraction=line.residual_fraction,
                       support_per_gpu_year=conv(line.support_per_gpu_year),
                       power_per_kwh=conv(book.power_usd_per_kwh), pue=book.pue,
                       colo_per_kw_month=conv(book.colo_per_kw_month), tdp_w=tdp,
                       missing_reason=None if line.capex_per_gpu is not None else
                       f"price book {book.id} prices {line.accelerator} {line.term} without a capex per GPU")
    return Pricing(kind="rental", currency=ccy, price_per_gpu_hour=conv(line.price_per_gpu_hour),
                   min_commit_months=line.min_commit_months, storage_per_gpu_hour=conv(book.storage_per_gpu_hour),
                   network_per_gpu_hour=conv(book.network_per_gpu_hour), support_fraction=book.support_fraction,
                   tdp_w=tdp, missing_reason=choice.missing_reason)


def economics_assumptions(inputs):
    from procure.economics.inputs import Assumptions

    from procure.inputs.resolve import fx_rate

    overrides = {k: v for k, v in inputs.cluster.assumptions.model_dump().items()
                 if v is not None and k in Assumptions.__dataclass_fields__}
    if "pue" in overrides:
        overrides["pue"] = Decimal(repr(overrides["pue"]))
    if "power_usd_per_kwh" in overrides:   # given in USD; the economics works in the report currency
        overrides["power_usd_per_kwh"] *= fx_rate(inputs.catalog, inputs.cluster, "USD")
    return Assumptions(**overrides)


def _bid_case(inputs, rb, est, measured, scaling):
    from procure.economics.inputs import BidCase, Commitment
    from procure.model import param_count

    c = rb.bid.committed
    return BidCase(id=rb.bid.id, vendor=rb.bid.vendor, performance=_performance(inputs, rb, est, measured),
                   pricing=_pricing(inputs, rb),
                   commitment=Commitment(c.step_time_s, c.p99_step_time_s, c.scaling_efficiency),
                   train_tokens=float(inputs.cluster.workload.train_tokens), params=param_count(inputs.arch),
                   deadline_days=inputs.cluster.workload.deadline_days,
                   scaling_efficiency=(scaling or {}).get("efficiency"))


def _scaling(inputs, rb, est) -> dict | None:
    from procure.catalog.calibration import load_knobs
    from procure.model import scaling_curve

    if not est.feasible:
        return None
    return scaling_curve(inputs.arch, rb.accelerator, rb.network, rb.bid.gpus, model_workload(inputs),
                         est.plan, knobs=load_knobs())


# ---------------------------------------------------------------------------------------------
# the document


def build_document(inputs, progress=None) -> dict:
    from procure.compare import compare

    assumptions = economics_assumptions(inputs)
    per_bid, cases = [], []
    total = len(inputs.bids)
    for done, rb in enumerate(inputs.bids):
        measured = measure_bid(rb)
        est = estimate_bid(inputs, rb, measured)
        scaling = _scaling(inputs, rb, est)
        per_bid.append((rb, est, measured, scaling))
        cases.append(_bid_case(inputs, rb, est, measured, scaling))
        if progress:
            progress(done + 1, total)
    comparison = compare(cases, assumptions).to_dict()
    bids = [_bid_entry(inputs, rb, est, measured, scaling, econ)
            for (rb, est, measured, scaling), econ in zip(per_bid, comparison["bids"])]
    return {
        "schema": "procure.quote/v1",
        "procure_version": __version__,
        "title": inputs.cluster.title,
        "as_of": inputs.cluster.as_of.isoformat(),
        "currency": inputs.cluster.currency,
        "inputs": [_fingerprint(inputs.path, "cluster", inputs.raw)]
                  + [_file_fingerprint(p, "measured") for rb in inputs.bids for p in rb.measured_paths],
        "workload": _workload(inputs),
        "assumptions": _assumption_rows(inputs, assumptions),
        "fx": _fx(inputs),
        "bids": bids,
        "ranking": comparison["ranking"],
        "recommendation": comparison["recommendation"],
        "sensitivity_summary": comparison["sensitivity_summary"],
        "sources": _sources(inputs),
        "methodology": _methodology(inputs),
    }


def _fingerprint(path: Path, role: str, data: bytes) -> dict:
    return {"path": Path(path).name, "role": role, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


def _file_fingerprint(path: Path, role: str) -> dict:
    """The same fingerprint, hashed in chunks so a large telemetry file is never held in memory."""
    with open(path, "rb") as handle:
        digest = hashlib.file_digest(handle, "sha256")
    return {"path": Path(path).name, "role": role, "sha256": digest.hexdigest(), "bytes": Path(path).stat().st_size}


def _workload(inputs) -> dict:
    from procure.model import active_param_count, model_flops_per_token, param_count

    w, arch = inputs.cluster.workload, inputs.arch
    moe = None
    if arch.moe is not None:
        moe = {"experts": arch.moe.experts, "top_k": arch.moe.top_k,
               "expert_ffn_hidden": arch.moe.expert_ffn_hidden, "shared_experts": arch.moe.shared_experts,
               "dense_layers": arch.moe.dense_layers}
    return {
        "model": {"id": arch.id, "name": arch.name, "params": param_count(arch),
                  "active_params": active_param_count(arch), "layers": arch.layers, "hidden": arch.hidden,
                  "heads": arch.heads, "kv_heads": arch.kv_heads, "ffn_hidden": arch.ffn_hidden,
                  "vocab": arch.vocab, "gated_mlp": arch.gated_mlp, "moe": moe},
        "seq_len": w.seq_len, "global_batch_seqs": w.global_batch_seqs,
        "global_batch_tokens": w.tokens_per_step, "train_tokens": float(w.train_tokens),
        "precision": w.precision, "deadline_days": w.deadline_days,
        "model_flops_per_token": model_flops_per_token(arch, w.seq_len),
        "attention_flops_convention": "non-causal (Megatron/PaLM)",
    }


ASSUMPTION_LABELS = {
    "failures_per_gpu_hour": ("Interruptions per GPU-hour", "1/GPU-h",
                              "Llama 3 Herd of Models, sec 3.3.4: 419 unplanned interruptions in 54 days on 16,384 H100"),
    "restart_min": ("Restart cost", "min", "MegaScale (NSDI 2024): training catches up within ~15 min"),
    "checkpoint_bytes_per_param": ("Checkpoint bytes per parameter", "B",
                                   "bf16 weights + fp32 master + Adam m, v (VAST Data via glennklockwood.com)"),
    "checkpoint_write_gbs": ("Checkpoint write bandwidth", "GB/s", "procure default"),
    "checkpoint_interval_min": ("Checkpoint interval", "min", "Young 1974 optimum when not given"),
    "gpu_utilisation_power": ("Average power draw", "fraction of TDP", "procure default"),
    "power_usd_per_kwh": ("Power price", "per kWh", "purchase price book facility figure when not given"),
    "pue": ("PUE", "", "purchase price book facility figure when not given"),
    "mfu_ceiling": ("MFU ceiling (implausible above)", "", "largest published runs stay below ~0.55-0.6"),
    "committed_tolerance": ("Committed vs modeled tolerance", "", "product.md: 15%"),
    "months_hours": ("Hours per billing month", "h", "8760 / 12"),
    "monte_carlo_samples": ("Monte Carlo samples", "", "procure default"),
    "seed": ("Monte Carlo seed", "", "procure default: same inputs give the same band"),
}


def _assumption_rows(inputs, assumptions) -> list[dict]:
    given = {k for k, v in inputs.cluster.assumptions.model_dump().items() if v is not None}
    rows = []
    for key, (label, unit, source) in ASSUMPTION_LABELS.items():
        value = getattr(assumptions, key, None)
        if isinstance(value, Decimal) or value is None or isinstance(value, (int, float)):
            rows.append({"key": key, "label": label, "value": value, "unit": unit,
                         "origin": Path(inputs.path).name if key in given else "default",
                         "source": "given in the input" if key in given else source})
    return rows


def _fx(inputs) -> dict | None:
    table = inputs.catalog.fx_for(inputs.cluster.as_of)
    if table is None:
        return None
    return {"base": table.base, "as_of": table.as_of.isoformat(), "rates": dict(sorted(table.rates.items())),
            "source": "; ".join(table.sourced.source), "verified": table.sourced.verified}


def _sources(inputs) -> list[dict]:
    cat, rows = inputs.catalog, {}

    def add(key, kind, label, sourced):
        if sourced is not None:
            rows[key] = {"key": key, "kind": kind, "label": label, "source": list(sourced.source),
                         "as_of": sourced.as_of, "verified": sourced.verified}

    arch = inputs.arch
    add(f"model:{arch.id}", "model", arch.name, arch.sourced)
    for rb in inputs.bids:
        add(f"accelerator:{rb.accelerator.id}", "accelerator", rb.accelerator.name, rb.accelerator.sourced)
        add(f"network:{rb.network.id}", "network", rb.network.name, rb.network.sourced)
        choice = rb.price
        if choice.book is not None and choice.line is not None:
            line = choice.line
            add(choice.source_key, "price", f"{choice.book.provider} {line.accelerator} {line.term}"
                + (f" ({line.sku})" if line.sku else ""), line.sourced)
            if choice.kind == "purchase":
                add(f"price-book:{choice.book.id}", "price book", f"{choice.book.provider} facility figures",
                    choice.book.sourced)
    fx = cat.fx_for(inputs.cluster.as_of)
    if fx is not None and any(rb.price.fx_rate != 1 for rb in inputs.bids):
        add(f"fx:{fx.as_of.isoformat()}", "fx", f"FX rates {fx.as_of.isoformat()}", fx.sourced)
    return [rows[k] for k in sorted(rows)]


def _methodology(inputs) -> dict:
    return {"model": "procure step-time model v1 (docs: procure/model/README.md)",
            "knobs": _knob_rows(inputs), "notes": [CHECKPOINT_NOTE, MFU_CONVENTION]}


def _knob_rows(inputs) -> dict:
    """The fitted knobs of the accelerators this quote uses, one flat row each, and what they were
    fitted on: the methodology appendix prints them as a table."""
    from procure.catalog.calibration import load_knobs

    described = load_knobs().describe()
    per_accel = described.get("accelerators", {})
    rows = {"fitted on": described.get("fitted_on"), "fitted at": described.get("fitted_at"),
            "fit MAPE": described.get("fit_mape")}
    for accel_id in sorted({rb.accelerator.id for rb in inputs.bids}):
        knobs = per_accel.get(accel_id)
        label = accel_id if knobs is not None else f"{accel_id} (default knobs)"
        knobs = dict(knobs if knobs is not None else described.get("default", {}))
        curve = knobs.pop("gemm_curve", None) or []
        knobs["gemm_curve"] = ", ".join(f"{x:.0e} s → {y:.2f}" for x, y in curve)
        rows[label] = {k: v for k, v in knobs.items() if v is not None}
    return rows


def _bid_entry(inputs, rb, est, measured, scaling, econ: dict) -> dict:
    bid, accel, net = rb.bid, rb.accelerator, rb.network
    w = inputs.cluster.workload
    entry = {
        "id": bid.id, "vendor": bid.vendor,
        "accelerator": {"id": accel.id, "name": accel.name, "peak_tflops": accel.peak_flops(w.precision) / 1e12,
                        "hbm_gb": accel.hbm_gb, "tdp_w": accel.tdp_w},
        "gpus": bid.gpus,
        "network": {"id": net.id, "name": net.name, "scale_out_gbps_per_gpu": net.scale_out_gbps_per_gpu},
        "pricing": _pricing_entry(rb),
        "plan": est.plan if est.feasible else None,
        "plan_origin": "auto" if bid.plan == "auto" else "given",
        # wall-clock seconds stay out: the document must be byte-identical for the same inputs
        "search": {k: v for k, v in (est.search or {}).items() if k != "seconds"},
        "runners_up": est.runners_up,
        "step_time_terms": dict(est.terms) if est.feasible else {},
        "modeled": ({"step_time_s": est.step_time_s, **{f"{k}_s": v for k, v in (est.percentiles_s or {}).items()}}
                    if est.feasible else None),
        "infeasible_reason": None if est.feasible else est.reason,
        "committed": bid.committed.model_dump(),
        "measured": _measured_entry(measured),
        "memory": _memory_entry(est, accel),
        "flops": {"model_per_step": est.model_flops_per_step, "hardware_per_step": est.hardware_flops_per_step},
        "tokens_per_step": w.tokens_per_step,
        "scaling": scaling,
        "mfu_convention": MFU_CONVENTION,
        "sources": sorted(filter(None, [f"accelerator:{accel.id}", f"network:{net.id}", rb.price.source_key])),
    }
    entry.update(econ)
    return entry


def _pricing_entry(rb) -> dict:
    choice = rb.price
    line = choice.line
    price = choice.inline_price
    if line is not None and line.price_per_gpu_hour is not None:
        price = line.price_per_gpu_hour * choice.fx_rate
    return {"kind": choice.kind, "price_book": choice.book.id if choice.book else None,
            "term": line.term if line else rb.bid.pricing.term, "price_per_gpu_hour": price,
            "book_currency": choice.book_currency, "fx_rate": choice.fx_rate,
            "min_commit_months": line.min_commit_months if line else 0,
            "capex_per_gpu": (line.capex_per_gpu * choice.fx_rate) if line and line.capex_per_gpu is not None else None,
            "missing_reason": choice.missing_reason}


def _measured_entry(measured: Measured | None) -> dict | None:
    if measured is None:
        return None
    return {"sources": measured.sources, "step_time_s": measured.summary, "histogram": measured.histogram,
            "busbw_gbs": measured.busbw_gbs, "busbw_used": measured.scale_out_gbs is not None,
            "busbw_note": measured.busbw_note}


def _memory_entry(est, accel) -> dict:
    mem = dict(est.memory_gib or {})
    capacity = mem.pop("capacity", accel.hbm_gb * 1e9 / 2**30)
    used = mem.pop("total", None)
    return {"fits": bool(est.feasible), "hbm_gib": capacity, "used_gib": used, "parts_gib": mem}
