"""A sweep end to end, without rendering: plan the chunks, skip the finished ones, run the rest
(in process, on every core, or on Dask), keep each as it finishes, assemble the document.

The document is always assembled from the partial files, read in chunk order, so a fresh run,
a resumed run and a run on any scheduler give the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from procure.sweep.assemble import sweep_document
from procure.sweep.document import SweepDocument
from procure.sweep.evaluate import Row
from procure.sweep.execute import run_chunks
from procure.sweep.expand import Chunk, SweepPlan
from procure.sweep.store import PartStore, fingerprint

Progress = Callable[[int, int], None]


@dataclass
class SweepRun:
    document: SweepDocument
    points: int
    computed_points: int                 # evaluated in this run (the rest were resumed)
    resumed_chunks: int
    timings_s: dict[str, float] = field(default_factory=dict)


def part_store(plan: SweepPlan, folder: Path) -> PartStore:
    return PartStore(folder, fingerprint(plan.sweep.raw, plan.context), len(plan.chunks))


def run_sweep(plan: SweepPlan, parts_dir: Path, *, scheduler: str | None = None,
              workers: int | None = None, fresh: bool = False, progress: Progress | None = None,
              keep_parts: bool = False, on_chunk: Callable[[Chunk], None] | None = None) -> SweepRun:
    """Evaluate every point not already in ``parts_dir``, then assemble the document."""
    import time

    start = time.perf_counter()
    store = part_store(plan, parts_dir)
    finished = store.open(fresh)
    per_chunk = len(plan.context.terms)
    total = plan.total_points
    done = sum(len(c.gpus) for c in plan.chunks if c.id in finished) * per_chunk
    computed = 0
    if progress:
        progress(done, total)

    def on_done(chunk: Chunk, rows: list[Row]) -> None:
        nonlocal done, computed
        store.write(chunk.id, rows)
        done += len(chunk.gpus) * per_chunk
        computed += len(chunk.gpus) * per_chunk
        if on_chunk:
            on_chunk(chunk)
        if progress:
            progress(done, total)

    pending = [c for c in plan.chunks if c.id not in finished]
    run_chunks(plan.context, pending, on_done, scheduler=scheduler, workers=workers)
    evaluated = time.perf_counter()
    rows = store.read([c.id for c in plan.chunks])
    document = sweep_document(plan, rows)
    if not keep_parts:
        store.remove()
    end = time.perf_counter()
    return SweepRun(document, total, computed, len(finished),
                    {"evaluate": round(evaluated - start, 3), "assemble": round(end - evaluated, 3)})
