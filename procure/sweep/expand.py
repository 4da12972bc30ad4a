"""The points of a sweep, and the chunks they are evaluated in.

Points run workload-major, then accelerator, network, GPU count and price term. A point is a
bid of a cluster.yaml that never had to be written: its prices are resolved by the quote's own
``inputs.resolve`` (book lines, inline prices, FX to the sweep currency), so a point and the
quote of its emitted cluster.yaml price the same. The plan search depends on the workload, the
accelerator, the network and the GPU count, never on the price term: it runs once per
(workload, accelerator, network, GPU count) and serves every term of that problem.

A chunk is one (workload, accelerator, network) and up to ``CHUNK_COUNTS`` GPU counts. The chunk
list depends on sweep.yaml only, so a resumed sweep finds the same chunks whatever the scheduler.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from procure.catalog.knobs import Knobs
from procure.catalog.types import Accelerator, Network
from procure.economics.inputs import Assumptions
from procure.inputs.bundle import Inputs
from procure.inputs.resolve import ResolvedBid, resolve_bids, workload_arch
from procure.inputs.schema import Bid, Cluster, PricingSpec, Workload
from procure.sources.yamlpos import YamlDocument
from procure.sweep.load import SweepInputs, accelerator_choices
from procure.sweep.schema import MAX_POINTS, GpuCounts, GpuRange, SweepSpec, SweepTerm, SweepWorkload

CHUNK_COUNTS = 8            # GPU counts per chunk: about a second of plan searches


@dataclass(frozen=True)
class Candidate:
    """One accelerator of the sweep with the networks and GPU counts it is tried on."""

    accelerator: Accelerator
    networks: tuple[Network, ...]
    gpus: tuple[int, ...]


@dataclass(frozen=True)
class Chunk:
    id: int
    workload: int                   # index into SweepContext.inputs
    accelerator: str
    network: str
    gpus: tuple[int, ...]
    first_index: int                # points run GPU-count-major, term-minor from here


@dataclass(frozen=True)
class SweepContext:
    """Everything a worker needs, shipped once per worker (no files are read there)."""

    inputs: tuple[Inputs, ...]                       # one per workload
    workload_ids: tuple[str, ...]
    bases: tuple[str, ...]                           # the cost basis that ranks each workload
    templates: dict[str, tuple[ResolvedBid, ...]]    # accelerator -> one priced bid per term
    networks: dict[str, Network]
    assumptions: Assumptions
    knobs: Knobs
    terms: tuple[str, ...]
    id_width: int
    feasible_only: dict[str, bool]                   # accelerator -> drop infeasible counts


@dataclass(frozen=True)
class SweepPlan:
    sweep: SweepInputs
    candidates: tuple[Candidate, ...]
    context: SweepContext
    chunks: tuple[Chunk, ...]

    @property
    def total_points(self) -> int:
        return sum(len(c.gpus) for c in self.chunks) * len(self.context.terms)


def point_id(index: int, width: int) -> str:
    return f"p{index + 1:0{width}d}"


def gpu_counts(counts: GpuCounts, accel: Accelerator) -> tuple[int, ...]:
    """The GPU counts of a list or a range (``step: node`` steps by the scale-up domain)."""
    if isinstance(counts, list):
        return tuple(counts)
    step = max(1, accel.scale_up_domain) if counts.step == "node" else int(counts.step)
    start = counts.from_ if counts.step != "node" else math.ceil(counts.from_ / step) * step
    return tuple(range(start, counts.to + 1, step))


def candidates(spec: SweepSpec, sweep: SweepInputs) -> tuple[Candidate, ...]:
    cat = sweep.catalog
    out = []
    for choice in accelerator_choices(spec, cat):
        accel = cat.accelerators[choice.id]
        names = choice.networks or spec.networks or [n for n in (accel.default_network,) if n is not None]
        networks = tuple(cat.networks[n] for n in names)
        out.append(Candidate(accel, networks, gpu_counts(choice.gpus or spec.gpus, accel)))
    return tuple(out)


def _feasible_only(spec: SweepSpec, sweep: SweepInputs) -> dict[str, bool]:
    out = {}
    for choice in accelerator_choices(spec, sweep.catalog):
        counts = choice.gpus or spec.gpus
        out[choice.id] = isinstance(counts, GpuRange) and counts.feasible_only
    return out


def ranking_basis(spec: SweepSpec, workload: SweepWorkload) -> str:
    """The sweep's basis, else the workload's, else the quote's default."""
    from procure.economics.cost import DEFAULT_BASIS

    return spec.cost_basis or workload.cost_basis or DEFAULT_BASIS


def point_workload(spec: SweepSpec, workload: SweepWorkload) -> dict[str, Any]:
    """The cluster.yaml workload of a point: the sweep's deadline where the workload sets none, and
    the basis that ranks it spelled out."""
    data = workload.model_dump(mode="python", exclude={"id"}, exclude_none=True)
    if workload.deadline_days is None and workload.deadline is None and spec.constraints.deadline_days:
        data["deadline_days"] = spec.constraints.deadline_days
    data["cost_basis"] = ranking_basis(spec, workload)
    return data


def _cluster(spec: SweepSpec, workload: SweepWorkload, bids: list[Bid]) -> Cluster:
    return Cluster.model_validate({
        "schema": "procure/v1", "title": spec.title, "as_of": spec.as_of, "currency": spec.currency,
        "workload": Workload.model_validate(point_workload(spec, workload)), "assumptions": spec.assumptions,
        "price_books": spec.price_books, "bids": bids})


def _pricing(term: SweepTerm) -> PricingSpec:
    return PricingSpec.model_validate(term.model_dump(exclude={"id", "accelerators"}))


def _template_bids(spec: SweepSpec, accel: Accelerator, network: Network) -> list[Bid]:
    return [Bid(id=f"t{j}", vendor=term.label, accelerator=accel.id, gpus=1, network=network.id,
                pricing=_pricing(term)) for j, term in enumerate(spec.terms)]


def _not_offered(rb: ResolvedBid, term: SweepTerm) -> ResolvedBid:
    """An inline price that does not name this accelerator: the point is price-missing."""
    reason = (f"term {term.label!r} prices only {', '.join(term.accelerators or [])}, "
              f"not {rb.accelerator.id}")
    price = dataclasses.replace(rb.price, quoted=(), plain={}, missing_reason=reason)
    return dataclasses.replace(rb, price=price)


def templates(spec: SweepSpec, sweep: SweepInputs, cluster: Cluster,
              cands: tuple[Candidate, ...]) -> dict[str, tuple[ResolvedBid, ...]]:
    """Per accelerator, one resolved bid per term (the quote's price resolution)."""
    out = {}
    for cand in cands:
        bids = _template_bids(spec, cand.accelerator, cand.networks[0])
        resolved = resolve_bids(cluster.model_copy(update={"bids": bids}), sweep.catalog,
                                sweep.path.resolve().parent, [])
        out[cand.accelerator.id] = tuple(
            _not_offered(rb, term) if term.price_book is None and cand.accelerator.id not in
            (term.accelerators or []) else rb
            for rb, term in zip(resolved, spec.terms))
    return out


def assumptions_for(sweep: SweepInputs, cluster: Cluster) -> Assumptions:
    from procure.pipeline import economics_assumptions

    return economics_assumptions(_inputs(sweep, cluster))


def _inputs(sweep: SweepInputs, cluster: Cluster) -> Inputs:
    # the file name only: where the sweep was run from must not change its fingerprint
    name = sweep.path.name
    return Inputs(Path(name), cluster, YamlDocument(name, {}), sweep.catalog, [],
                  workload_arch(cluster, sweep.catalog))


def chunks(cands: tuple[Candidate, ...], n_workloads: int, n_terms: int) -> tuple[Chunk, ...]:
    out: list[Chunk] = []
    index = 0
    for w in range(n_workloads):
        for cand in cands:
            for net in cand.networks:
                for start in range(0, len(cand.gpus), CHUNK_COUNTS):
                    block = cand.gpus[start:start + CHUNK_COUNTS]
                    out.append(Chunk(len(out), w, cand.accelerator.id, net.id, block, index))
                    index += len(block) * n_terms
    return tuple(out)


def plan_sweep(sweep: SweepInputs, knobs: Knobs | None = None) -> SweepPlan:
    """Expand sweep.yaml into chunks of points and the context their workers share."""
    from procure.catalog.calibration import load_knobs
    from procure.errors import input_error

    spec = sweep.spec
    cands = candidates(spec, sweep)
    clusters = [_cluster(spec, w, _template_bids(spec, cands[0].accelerator, cands[0].networks[0]))
                for w in spec.workloads]
    parts = chunks(cands, len(spec.workloads), len(spec.terms))
    total = sum(len(c.gpus) for c in parts) * len(spec.terms)
    if total > MAX_POINTS:
        raise input_error(str(sweep.path), "too-many-points",
                          f"the sweep expands to {total:,} points (at most {MAX_POINTS:,}); "
                          "narrow the GPU range or the lists")
    context = SweepContext(
        inputs=tuple(_inputs(sweep, c) for c in clusters),
        workload_ids=tuple(w.id for w in spec.workloads),
        bases=tuple(ranking_basis(spec, w) for w in spec.workloads),
        templates=templates(spec, sweep, clusters[0], cands),
        networks={n.id: n for cand in cands for n in cand.networks},
        assumptions=assumptions_for(sweep, clusters[0]),
        knobs=knobs or load_knobs(),
        terms=tuple(t.label for t in spec.terms),
        id_width=max(4, len(str(total))),
        feasible_only=_feasible_only(spec, sweep),
    )
    return SweepPlan(sweep, cands, context, parts)
