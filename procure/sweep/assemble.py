"""Rows of every point + the sweep's inputs -> the ``procure.sweep/v1`` document (each field
filled once, from its producer)."""

from __future__ import annotations

import hashlib
from typing import Any

from procure.sweep.analyse import mark, workload_findings
from procure.sweep.document import SCHEMA, SweepDocument
from procure.sweep.expand import SweepPlan

UNCERTAINTY_SCOPE = "every costed point (the quote's band, per point)"


def _workloads(plan: SweepPlan) -> list[dict[str, Any]]:
    from procure.model import param_count

    out = []
    for wid, basis, inputs in zip(plan.context.workload_ids, plan.context.bases, plan.context.inputs):
        w = inputs.cluster.workload
        phases = [{"name": p.name, "seq_len": p.seq_len, "global_batch_seqs": p.global_batch_seqs,
                   "train_tokens": p.tokens} for p in w.phases]
        tokens = [float(w.train_tokens)] + [p.tokens for p in w.phases]     # every phase, as the economics
        out.append({"id": wid, "model": inputs.arch.id, "params": param_count(inputs.arch),
                    "seq_len": w.seq_len, "global_batch_seqs": w.global_batch_seqs,
                    "tokens_per_step": w.tokens_per_step, "train_tokens": sum(tokens),
                    "precision": w.precision, "deadline_days": inputs.cluster.deadline_days,
                    "cost_basis": basis, "phases": phases})
    return out


def _accelerators(plan: SweepPlan) -> list[dict[str, Any]]:
    return [{"id": c.accelerator.id, "name": c.accelerator.name, "hbm_gb": c.accelerator.hbm_gb,
             "tdp_w": c.accelerator.tdp_w, "scale_up_domain": c.accelerator.scale_up_domain,
             "networks": [n.id for n in c.networks], "gpu_counts": list(c.gpus)}
            for c in plan.candidates]


def _terms(plan: SweepPlan) -> list[dict[str, Any]]:
    from procure.inputs.resolve import price_terms

    spec, currency = plan.sweep.spec, plan.sweep.spec.currency
    out = []
    for j, term in enumerate(spec.terms):
        book = plan.sweep.catalog.price_books.get(term.price_book or "")
        prices = []
        for cand in plan.candidates:
            rb = plan.context.templates[cand.accelerator.id][j]
            priced = price_terms(rb, currency)
            missing = priced.get("missing_reason")
            prices.append({"accelerator": cand.accelerator.id,
                           "price_per_gpu_hour": priced.get("price_per_gpu_hour"),
                           "capex_per_gpu": priced.get("capex_per_gpu"),
                           "min_commit_months": priced.get("min_commit_months", 0),
                           "missing_reason": missing})
        out.append({"id": term.label, "kind": term.kind, "price_book": term.price_book,
                    "term": term.term, "provider": book.provider if book else "inline price",
                    "prices": prices})
    return out


def _uncertainty(plan: SweepPlan) -> dict[str, Any]:
    from procure.economics import uncertainty as u

    a = plan.context.assumptions
    return {"scope": UNCERTAINTY_SCOPE, "seed": a.seed, "samples": a.monte_carlo_samples,
            "distributions": {
                "price": f"triangular ±{u.PRICE_SPREAD:.0%}",
                "step_time": "lognormal: the model's error for the point's accelerator family "
                             "(wider without fitted knobs: the `uncalibrated` flag)",
                "failure_rate": f"lognormal sigma {u.FAILURE_SIGMA}",
                "power_price": f"uniform ±{u.POWER_SPREAD:.0%}"}}


def sweep_document(plan: SweepPlan, rows: list[dict[str, Any]]) -> SweepDocument:
    from procure import __version__

    spec = plan.sweep.spec
    marked = mark(sorted(rows, key=lambda r: r["index"]), spec.constraints)
    names = {c.accelerator.id: c.accelerator.name for c in plan.candidates}
    accel_ids = [c.accelerator.id for c in plan.candidates]
    findings = [workload_findings(marked, w.id, accel_ids, list(plan.context.terms), spec.ask, names,
                                  spec.currency, basis) for w, basis in zip(spec.workloads, plan.context.bases)]
    c = spec.constraints
    return SweepDocument.model_validate({
        "schema": SCHEMA, "procure_version": __version__, "title": spec.title, "as_of": spec.as_of,
        "currency": spec.currency, "cost_basis": spec.cost_basis,
        "sweep_sha256": hashlib.sha256(plan.sweep.raw).hexdigest(),
        "workloads": _workloads(plan), "accelerators": _accelerators(plan), "terms": _terms(plan),
        "constraints": {"deadline_days": c.deadline_days, "budget": c.budget, "max_net_cost": c.max_net_cost, "max_gpus": c.max_gpus,
                        "max_power_mw": c.max_power_mw},
        "uncertainty": _uncertainty(plan), "findings": findings, "points": marked,
    })
