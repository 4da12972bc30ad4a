"""Thin orchestration: inputs -> measure -> model -> economics -> result document -> reports.

Every function here is what one CLI command does, without printing. Errors are ProcureErrors.
"""

from __future__ import annotations

import os

import re

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from procure.errors import PolicyError, input_error

if TYPE_CHECKING:
    from collections.abc import Collection

    from procure.catalog.views import EntryList, Shown
    from procure.compare_rounds import Diff
    from procure.document import QuoteDocument
    from procure.inputs.bundle import Inputs
    from procure.pipeline import Progress   # called with (done, total) as work advances
    from procure.sweep import SweepInputs, SweepPlan, SweepRun


def load_inputs(path: Path | str, allow_paths: list[Path] | None = None,
                price_books: list[Path] | None = None) -> "Inputs":
    """Read, validate and cross-check cluster.yaml; every problem at once as InputError."""
    from procure.inputs.bundle import load_inputs as load

    return load(path, allow_paths, price_books)


def validate(path: Path | str, allow_paths: list[Path] | None = None,
             price_books: list[Path] | None = None) -> Inputs | SweepInputs:
    """The validated inputs of cluster.yaml, or of a sweep.yaml (told apart by its `schema:`)."""
    if _is_sweep_file(Path(path)):
        from procure.sweep.load import load_sweep

        return load_sweep(path)
    return load_inputs(path, allow_paths, price_books)


_SWEEP_SCHEMA = re.compile(rb"(?m)^schema:[ \t]*[\"']?procure\.sweep/")


def _is_sweep_file(path: Path) -> bool:
    if not path.is_file():                   # a pipe or a device is refused by the real read, unopened
        return False
    try:
        with open(path, "rb") as handle:     # the head only: the real read is bounded and checked later
            return bool(_SWEEP_SCHEMA.search(handle.read(65536)))
    except OSError:
        return False


def estimate(path: Path | str, bid_id: str | None = None, allow_paths: list[Path] | None = None) -> dict[str, Any]:
    from procure.catalog.calibration import load_knobs
    from procure.pipeline import critical_batch, estimate_bid_batch

    inputs = load_inputs(path, allow_paths)
    bids = [b for b in inputs.bids if bid_id is None or b.bid.id == bid_id]
    if not bids:
        known = ", ".join(b.bid.id for b in inputs.bids)
        raise input_error(str(path), "unknown-bid", f"no bid {bid_id!r} (bids: {known})")
    out, critical = [], critical_batch(inputs)
    for rb in bids:
        est, batch = estimate_bid_batch(inputs, rb, None, load_knobs(), critical)
        entry: dict[str, Any] = {"id": rb.bid.id, "accelerator": rb.accelerator.id, "gpus": rb.bid.gpus,
                 "network": rb.network.id, "global_batch_seqs": batch.global_batch_seqs,
                 "token_penalty": batch.token_penalty}
        entry.update(est.to_dict())
        out.append(entry)
    return {"schema": "procure.estimate/v1", "bids": out}


@dataclass
class QuoteResult:
    document: QuoteDocument
    written: list[Path] = field(default_factory=list)
    fail_on: list[str] = field(default_factory=list)

    def tripped(self) -> list[tuple[str, str]]:
        return [(bid.id, flag.code) for bid in self.document.bids for flag in bid.flags
                if flag.code in self.fail_on]

    def check_policy(self) -> None:
        hits = self.tripped()
        if hits:
            listed = ", ".join(f"{bid}: {code}" for bid, code in hits)
            raise PolicyError(f"--fail-on tripped: {listed}")


def quote_document(path: Path | str, allow_paths: list[Path] | None = None, progress: Progress | None = None,
                   basis: str | None = None, price_books: list[Path] | None = None) -> QuoteDocument:
    from procure.pipeline import build_document

    inputs = load_inputs(path, allow_paths, price_books)
    return build_document(inputs, progress=progress, basis=basis)


def quote(path: Path | str, out_dir: Path, formats: list[str], *, templates_dir: Path | None = None,
          lang: str = "en", page_size: str = "A4", force: bool = False,
          allow_paths: list[Path] | None = None, fail_on: list[str] | None = None,
          progress: Progress | None = None, basis: str | None = None,
          price_books: list[Path] | None = None, bid_pages: str | None = None) -> QuoteResult:
    from procure.economics import FLAG_CODES
    from procure.sources.suggest import suggest
    from procure.report import FORMATS, render

    _check_formats(formats, FORMATS)
    for code in fail_on or []:
        if code not in FLAG_CODES:
            raise input_error("--fail-on", "unknown-flag", f"{code!r} is not a flag{suggest(code, FLAG_CODES)}")
    if templates_dir is not None and not Path(templates_dir).is_dir():
        raise input_error("--templates", "not-found", f"templates folder {templates_dir} does not exist")
    _check_bid_pages(bid_pages)            # before the bids are computed, not after
    from procure.pipeline import build_document
    from procure.report.writer import output_lock

    inputs = load_inputs(path, allow_paths, price_books)
    with output_lock(Path(out_dir)):     # the whole run: a second quote into this folder is "busy"
        document = build_document(inputs, progress=progress, basis=basis)
        from procure.report import unique_slug

        source = os.path.realpath(path)
        slug = unique_slug(Path(out_dir), slugify(document.title) or Path(path).stem, formats, source)
        attachments = _attachments(inputs)
        written = render(document, formats, Path(out_dir), slug, templates_dir=templates_dir, lang=lang,
                         page_size=page_size, force=force, attachments=attachments, bid_pages=bid_pages,
                         source=source)
    return QuoteResult(document, written, list(fail_on or []))


ATTACH_LIMIT_BYTES = 25 * 1024 * 1024   # telemetry can be huge: past this, inputs are listed, not attached


def _attachments(inputs: Inputs) -> list[tuple[str, bytes]]:
    """cluster.yaml and the measured logs, embedded in the PDF while they stay small."""
    files = [(Path(inputs.path).name, inputs.raw)]
    total = len(inputs.raw)
    for rb in inputs.bids:
        for log in rb.measured_paths:
            if log.is_file() and total + log.stat().st_size <= ATTACH_LIMIT_BYTES:
                files.append((log.name, log.read_bytes()))
                total += log.stat().st_size
    return files


def render_saved(result_json: Path, out_dir: Path, formats: list[str], *, templates_dir: Path | None = None,
                 lang: str = "en", page_size: str = "A4", force: bool = False,
                 bid_pages: str | None = None) -> list[Path]:
    from procure.report import FORMATS, render

    _check_formats(formats, FORMATS)
    _check_bid_pages(bid_pages)
    from procure.report import unique_slug
    from procure.report.writer import output_lock, owner, read_manifest

    document = read_quote(Path(result_json))
    # the input the saved JSON came from, when its folder's manifest knows it: re-rendering
    # reports/x.json into reports/ keeps the name x
    source = owner(read_manifest(Path(result_json).parent), Path(result_json).name) or \
        os.path.realpath(result_json)
    with output_lock(Path(out_dir)):
        slug = unique_slug(Path(out_dir), slugify(document.title) or Path(result_json).stem, formats, source)
        return render(document, formats, Path(out_dir), slug, templates_dir=templates_dir, lang=lang,
                      page_size=page_size, force=force, bid_pages=bid_pages, source=source)


def read_quote(path: Path) -> QuoteDocument:
    """A saved result document, any known version, validated against the schema."""
    from procure.document import load_quote
    from procure.jsontext import MAX_JSON_BYTES
    from procure.sources.files import read_json_limited

    return load_quote(read_json_limited(Path(path), str(path), MAX_JSON_BYTES), str(path))


def backtest(runs_path: Path | str) -> dict[str, Any]:
    from procure.pipeline import run_backtest

    return run_backtest(Path(runs_path))


def ingest(paths: list[Path], fmt: str | None = None, scheduler: str | None = None,
           progress: Progress | None = None) -> dict[str, Any]:
    from procure.measure import ingest as measure_ingest

    return measure_ingest(paths, fmt=fmt, scheduler=scheduler, progress=progress).to_dict()


def catalog_list(kind: str = "all") -> EntryList:
    from procure.catalog.views import list_entries

    return list_entries(kind)


def catalog_show(entry_id: str) -> Shown:
    from procure.catalog.views import show_entry

    return show_entry(entry_id)


def diff(old: Path, new: Path) -> Diff:
    from procure.compare_rounds import diff_documents

    docs = [read_quote(Path(p)).to_data() for p in (old, new)]
    return diff_documents(docs[0], docs[1], str(old), str(new))


def _check_bid_pages(bid_pages: str | None) -> None:
    from procure.report.bid_pages import parse_bid_pages

    try:
        parse_bid_pages(bid_pages)
    except ValueError as exc:
        raise input_error("--bid-pages", "bad-option", str(exc)) from None


def _check_formats(formats: list[str], known: Collection[str]) -> None:
    from procure.sources.suggest import suggest

    if not formats:
        raise input_error("--format", "bad-format", f"give at least one of {', '.join(known)}")
    for fmt in formats:
        if fmt not in known:
            raise input_error("--format", "bad-format", f"unknown format {fmt!r}{suggest(fmt, known)}")


def slugify(text: str) -> str:
    import re
    import unicodedata

    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:80]


@dataclass
class SweepResult:
    run: "SweepRun"
    written: list[Path] = field(default_factory=list)
    parts_dir: Path | None = None


def sweep_plan(path: Path | str) -> "SweepPlan":
    """Read and check sweep.yaml and expand it into chunks of points (nothing evaluated)."""
    from procure.sweep import load_sweep, plan_sweep

    return plan_sweep(load_sweep(path))


def sweep_cluster(path: Path | str, point: str) -> str:
    """The cluster.yaml of one point of a sweep (``procure quote`` on it gives the point's figures)."""
    from procure.sweep.emit import cluster_yaml

    return cluster_yaml(sweep_plan(path), point)


def sweep_parts_dir(out_dir: Path, slug: str) -> Path:
    return Path(out_dir) / f"{slug}.parts"


def sweep(path: Path | str, out_dir: Path, formats: list[str], *, scheduler: str | None = None,
          workers: int | None = None, fresh: bool = False, force: bool = False, page_size: str = "A4",
          templates_dir: Path | None = None,
          progress: Progress | None = None) -> SweepResult:
    """Evaluate every point of sweep.yaml (resuming an interrupted run) and write the reports."""
    from procure.report.sweep import check_formats, render_sweep, sweep_targets
    from procure.report.writer import check_targets
    from procure.sweep import run_sweep

    formats = check_formats(formats)
    if templates_dir is not None and not Path(templates_dir).is_dir():
        raise input_error("--templates", "not-found", f"templates folder {templates_dir} does not exist")
    plan = sweep_plan(path)
    slug = slugify(plan.sweep.spec.title) or Path(path).stem
    check_targets(sweep_targets(Path(out_dir), slug, formats), force)   # before hours of work, not after
    parts = sweep_parts_dir(Path(out_dir), slug)
    run = run_sweep(plan, parts, scheduler=scheduler, workers=workers, fresh=fresh, progress=progress)
    written = render_sweep(run.document, formats, Path(out_dir), slug, page_size=page_size,
                           templates_dir=templates_dir, force=True) if formats else []
    return SweepResult(run, written, parts)
