"""From a point to a quote: the cluster.yaml of one point of a sweep.

The point's workload (with the deadline and the cost basis the sweep applied), the sweep's
assumptions and price-book folders, and one bid with the point's accelerator, GPU count, network
and price term. ``procure quote`` on it runs
the same plan search and economics as the sweep did, so it reports the point's figures, and
adds everything a quote has (cost lines, sensitivity, the workbook with live formulas).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from procure.errors import input_error
from procure.sweep.expand import Chunk, SweepPlan, point_id, point_workload


def locate(plan: SweepPlan, pid: str) -> tuple[Chunk, int, int]:
    """(chunk, GPU count, term index) of point ``pid``."""
    n_terms = len(plan.context.terms)
    for chunk in plan.chunks:
        size = len(chunk.gpus) * n_terms
        for offset in range(size):
            if point_id(chunk.first_index + offset, plan.context.id_width) == pid:
                return chunk, chunk.gpus[offset // n_terms], offset % n_terms
    last = point_id(plan.total_points - 1, plan.context.id_width)
    raise input_error("--emit-cluster", "unknown-point",
                      f"no point {pid!r} in this sweep (points run {point_id(0, plan.context.id_width)}"
                      f" to {last})")


def _yaml_dump(data: dict[str, Any]) -> str:
    import yaml

    dumper: Any = type("Dumper", (yaml.SafeDumper,), {})

    def decimal(d: Any, value: Decimal) -> Any:
        return d.represent_scalar("tag:yaml.org,2002:float", str(value))

    dumper.add_representer(Decimal, decimal)
    return str(yaml.dump(data, Dumper=dumper, sort_keys=False, allow_unicode=True, width=100))


def cluster_yaml(plan: SweepPlan, pid: str) -> str:
    spec = plan.sweep.spec
    chunk, gpus, t = locate(plan, pid)
    term = spec.terms[t]
    if term.price_book is None and chunk.accelerator not in (term.accelerators or []):
        raise input_error("--emit-cluster", "price-missing",
                          f"point {pid}: term {term.label!r} prices only {', '.join(term.accelerators or [])}, "
                          f"not {chunk.accelerator}; a quote of it would have no price")
    workload = spec.workloads[chunk.workload]
    pricing = term.model_dump(mode="python", exclude={"id", "accelerators"}, exclude_none=True)
    data: dict[str, Any] = {
        "schema": "procure/v1",
        "title": f"{spec.title} — {pid}"[:300],
        "as_of": spec.as_of,
        "currency": spec.currency,
        "workload": point_workload(spec, workload),
    }
    if spec.price_books:     # as written in sweep.yaml: save this file next to it
        data["price_books"] = list(spec.price_books)
    assumptions = spec.assumptions.model_dump(mode="python", exclude_none=True)
    if assumptions:
        data["assumptions"] = assumptions
    data["bids"] = [{"id": pid, "vendor": term.label, "accelerator": chunk.accelerator, "gpus": gpus,
                     "network": chunk.network, "pricing": pricing}]
    head = (f"# Point {pid} of the sweep {plan.sweep.path.name!r}: {gpus:,} x {chunk.accelerator} on "
            f"{chunk.network}, workload {workload.id}, term {term.label}.\n"
            f"# `procure quote` on this file reports the figures the sweep shows for {pid}.\n")
    return head + _yaml_dump(data)
