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
from procure.sources.once import each_file_once

if TYPE_CHECKING:
    from procure.catalog.views import EntryList, Shown
    from procure.compare_rounds import Diff
    from procure.document import QuoteDocument
    from procure.inputs.bundle import Inputs
    from procure.pipeline import Progress   # called with (done, total) as work advances
    from procure.sweep import SweepInputs, SweepPlan, SweepRun


def load_inputs(path: Path | str, allow_paths: list[Path] | None = None,
                price_books: list[Path] | None = None, responses: Path | None = None,
                model: Any = None) -> "Inputs":
    """Read, validate and cross-check cluster.yaml (and the vendors' responses); every problem at
    once as InputError. ``model``: the cluster schema (``RequestCluster`` for an RFQ)."""
    from procure.inputs.bundle import load_inputs as load
    from procure.inputs.schema import Cluster

    return load(path, allow_paths, price_books, responses, model or Cluster)


@each_file_once
def validate(path: Path | str, allow_paths: list[Path] | None = None,
             price_books: list[Path] | None = None, responses: Path | None = None) -> Inputs | SweepInputs:
    """The validated inputs of cluster.yaml (with the vendors' responses in ``responses``), or of a
    sweep.yaml (told apart by its `schema:`)."""
    if _is_sweep_file(Path(path)):
        from procure.sweep.load import load_sweep

        return load_sweep(path)
    return load_inputs(path, allow_paths, price_books, responses)


_SWEEP_SCHEMA = re.compile(rb"(?m)^schema:[ \t]*[\"']?procure\.sweep/")


def _is_sweep_file(path: Path) -> bool:
    if not path.is_file():                   # a pipe or a device is refused by the real read, unopened
        return False
    try:
        with open(path, "rb") as handle:     # the head only: the real read is bounded and checked later
            return bool(_SWEEP_SCHEMA.search(handle.read(65536)))
    except OSError:
        return False


@each_file_once
def estimate(path: Path | str, bid_id: str | None = None, allow_paths: list[Path] | None = None) -> dict[str, Any]:
    from procure.pipeline import TunedRecipes, critical_batch, estimate_run, gather, real_run

    inputs = load_inputs(path, allow_paths)
    if bid_id is not None and bid_id not in {b.bid.id for b in inputs.bids}:
        known = ", ".join(b.bid.id for b in inputs.bids)
        raise input_error(str(path), "unknown-bid", f"no bid {bid_id!r} (bids: {known})")
    gathered = gather(inputs, logs=False)       # the model's estimate: the bids' logs are the quote's
    out, critical = [], critical_batch(inputs)
    recipes = TunedRecipes(inputs, gathered.knobs, gathered.tuned_recipes)
    for rb, stack in zip(inputs.bids, gathered.software, strict=True):
        if bid_id is not None and rb.bid.id != bid_id:
            continue
        est, batch, run = estimate_run(inputs, rb, stack, gathered.knobs, critical)
        entry: dict[str, Any] = {"id": rb.bid.id, "accelerator": rb.accelerator.id, "gpus": rb.bid.gpus,
                 "network": rb.network.id, "global_batch_seqs": batch.global_batch_seqs,
                 "token_penalty": batch.token_penalty}
        entry.update(est.to_dict())
        # the run the quote would cost: the model's step time (logs are the quote's), goodput, phases
        entry["run"] = run.to_dict() if run else None
        # the same run as published whole runs go (run-level losses and the real-run gap they show)
        real = real_run(inputs, rb, stack, est, run, gathered.run_losses)
        entry["real_run"] = real.to_dict() if real else None
        # the nearest published tuned recipe of this model: its plan and measured step time next to
        # the search's best plan at the recipe's own scale (the quote prints the same comparison)
        entry["tuned_recipe"] = recipes.compare(rb, est)
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


@each_file_once
def quote_document(path: Path | str, allow_paths: list[Path] | None = None, progress: Progress | None = None,
                   basis: str | None = None, price_books: list[Path] | None = None,
                   responses: Path | None = None) -> QuoteDocument:
    from procure.pipeline import build_document

    inputs = load_inputs(path, allow_paths, price_books, responses)
    return build_document(inputs, progress=progress, basis=basis)


@each_file_once
def quote(path: Path | str, out_dir: Path, formats: list[str], *, templates_dir: Path | None = None,
          lang: str = "en", page_size: str = "A4", force: bool = False,
          allow_paths: list[Path] | None = None, fail_on: list[str] | None = None,
          progress: Progress | None = None, basis: str | None = None,
          price_books: list[Path] | None = None, bid_pages: str | None = None,
          responses: Path | None = None) -> QuoteResult:
    from procure.economics import FLAG_CODES
    from procure.sources.suggest import suggest
    from procure.report import render
    from procure.report.options import RenderOptions

    options = RenderOptions.checked(formats, lang=lang, page_size=page_size, templates_dir=templates_dir,
                                    bid_pages=bid_pages, force=force)   # once, before the bids are computed
    for code in fail_on or []:
        if code not in FLAG_CODES:
            raise input_error("--fail-on", "unknown-flag", f"{code!r} is not a flag{suggest(code, FLAG_CODES)}")
    from procure.pipeline import build_document
    from procure.report.writer import output_lock

    from procure.pipeline import gather

    inputs = load_inputs(path, allow_paths, price_books, responses)
    gathered = gather(inputs)             # every file read before the work; the pipeline is pure
    with output_lock(Path(out_dir)):     # the whole run: a second quote into this folder is "busy"
        document = build_document(inputs, progress=progress, basis=basis, gathered=gathered)
        from procure.report import unique_slug

        source = os.path.realpath(path)
        slug = unique_slug(Path(out_dir), slugify(document.title) or Path(path).stem, formats, source)
        attachments = _attachments(inputs, document)
        written = render(document, options, Path(out_dir), slug, attachments=attachments, source=source)
    return QuoteResult(document, written, list(fail_on or []))


ATTACH_LIMIT_BYTES = 25 * 1024 * 1024   # telemetry can be huge: past this, inputs are listed, not attached


def _attachments(inputs: Inputs, document: QuoteDocument) -> list[tuple[str, bytes]]:
    """cluster.yaml and the measured logs procure parsed, embedded in the PDF while they stay small.

    Only a file listed among the document's inputs is attached, and only when the bytes read now
    hash to the digest listed there: a file of a measured folder that was skipped (not a log, say
    ``credentials.txt``) is never carried, nor one swapped since it was parsed."""
    import hashlib

    from procure.sources.files import read_bytes_limited

    files = [(Path(inputs.path).name, inputs.raw)]
    total = len(inputs.raw)
    listed = {(f.path, f.sha256) for f in document.inputs if f.role == "measured"}
    names = {name for name, _digest in listed}
    for rb in inputs.bids:
        for log in rb.measured_paths:
            if log.name not in names or not log.is_file() or total + log.stat().st_size > ATTACH_LIMIT_BYTES:
                continue
            data = read_bytes_limited(log, str(log), ATTACH_LIMIT_BYTES - total)
            if (log.name, hashlib.sha256(data).hexdigest()) in listed:
                files.append((log.name, data))
                total += len(data)
    return files


@each_file_once
def render_saved(result_json: Path, out_dir: Path, formats: list[str], *, templates_dir: Path | None = None,
                 lang: str = "en", page_size: str = "A4", force: bool = False,
                 bid_pages: str | None = None) -> list[Path]:
    from procure.report import render, unique_slug
    from procure.report.options import RenderOptions

    options = RenderOptions.checked(formats, lang=lang, page_size=page_size, templates_dir=templates_dir,
                                    bid_pages=bid_pages, force=force)
    from procure.report.writer import output_lock, owner, read_manifest

    document = read_quote(Path(result_json))
    with output_lock(Path(out_dir)):
        # the input the saved JSON came from, when its folder's manifest knows it: re-rendering
        # reports/x.json into reports/ keeps the name x (the same folder's manifest: read once, locked)
        source = owner(read_manifest(Path(result_json).parent), Path(result_json).name) or \
            os.path.realpath(result_json)
        slug = unique_slug(Path(out_dir), slugify(document.title) or Path(result_json).stem, formats, source)
        return render(document, options, Path(out_dir), slug, source=source)


def read_quote(path: Path) -> QuoteDocument:
    """A saved result document, any known version, validated against the schema."""
    from procure.document import load_quote
    from procure.jsontext import MAX_JSON_BYTES
    from procure.sources.files import read_json_limited

    return load_quote(read_json_limited(Path(path), str(path), MAX_JSON_BYTES), str(path))


def backtest(runs_path: Path | str) -> dict[str, Any]:
    from procure.backtest.whole_runs import is_whole_runs
    from procure.pipeline import run_backtest, run_whole_backtest

    if is_whole_runs(runs_path):
        return run_whole_backtest(Path(runs_path))
    return run_backtest(Path(runs_path))


@each_file_once
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


@each_file_once
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


@each_file_once
def rfq(path: Path | str, out_dir: Path, *, lang: str = "en", force: bool = False) -> list[Path]:
    """``<slug>-rfq.pdf``, ``<slug>-response.xlsx`` and ``<slug>-response.yaml`` for the workload of
    a cluster.yaml (its bids, if any, are not needed)."""
    from procure.inputs.schema import RequestCluster
    from procure.report.rfq import fields_with_choices, request_pdf, request_view, response_xlsx, response_yaml
    from procure.report.writer import write_recorded

    inputs = load_inputs(path, model=RequestCluster)
    slug = slugify(inputs.cluster.title) or Path(path).stem
    fields = fields_with_choices(inputs.catalog)
    names = (f"{slug}-rfq.pdf", f"{slug}-response.xlsx", f"{slug}-response.yaml")
    view = request_view(inputs, fields, lang, (names[1], names[2]))
    paths = [Path(out_dir) / name for name in names]

    def produce(_: object) -> list[tuple[Path, bytes]]:
        data = [request_pdf(view, inputs.cluster.as_of.isoformat(), Path(path).resolve().parent),
                response_xlsx(fields, inputs.catalog, lang), response_yaml(fields, lang)]
        return list(zip(paths, data))

    return write_recorded(Path(out_dir), paths, produce, force=force, source=os.path.realpath(path))


@each_file_once
def acceptance(path: Path | str, bid_id: str, out_dir: Path, *, lang: str = "en", page_size: str = "A4",
               force: bool = False, allow_paths: list[Path] | None = None,
               price_books: list[Path] | None = None) -> list[Path]:
    """Write the bid's burn-in protocol: ``<slug>-<bid>-acceptance.yaml`` (procure.acceptance/v1)
    and its PDF page. An unknown bid, or one that commits nothing testable, is bad input."""
    import yaml

    from procure.acceptance.spec import NoCommitment, bid_ids, build_spec
    from procure.report.acceptance_page import render_acceptance_pdf
    from procure.report.writer import write_recorded
    from procure.sources.suggest import suggest

    inputs = load_inputs(path, allow_paths, price_books)
    try:
        spec = build_spec(inputs, bid_id)
    except KeyError:
        known = bid_ids(inputs)
        raise input_error("--bid", "unknown-bid", f"no bid {bid_id!r} in {path} (bids: {', '.join(known)})"
                          f"{suggest(bid_id, known)}") from None
    except NoCommitment as exc:
        raise input_error(str(path), "no-commitment", str(exc)) from None
    stem = f"{slugify(spec.title) or Path(path).stem}-{bid_id}-acceptance"
    targets = [Path(out_dir) / f"{stem}.yaml", Path(out_dir) / f"{stem}.pdf"]

    def produce(_: object) -> list[tuple[Path, bytes]]:
        text = "# procure acceptance spec\n" + yaml.safe_dump(spec.to_data(), sort_keys=False, allow_unicode=True,
                                                            width=100)
        pdf = render_acceptance_pdf(spec, targets[0].name, lang=lang, page_size=page_size)
        return [(targets[0], text.encode("utf-8")), (targets[1], pdf)]

    return write_recorded(Path(out_dir), targets, produce, force=force, source=os.path.realpath(path))


def read_acceptance_spec(path: Path | str) -> Any:
    """A ``procure.acceptance/v1`` file, validated; every problem at its file:line:col."""
    from procure.acceptance.spec import AcceptanceSpec
    from procure.sources.validate import validate_document
    from procure.sources.yamlpos import read_yaml

    return validate_document(read_yaml(path), AcceptanceSpec)


@each_file_once
def accept(spec_path: Path | str, logs: list[Path], fmt: str | None = None,
           scheduler: str | None = None, progress: Progress | None = None) -> Any:
    """Check measured logs against an acceptance spec: the AcceptanceResult (its ``passed`` says
    whether every threshold holds). Too few measured steps is bad input, never a pass."""
    from procure.acceptance.check import TooFewSteps, check
    from procure.measure import ingest as measure_ingest

    spec = read_acceptance_spec(spec_path)
    result = measure_ingest(logs, fmt=fmt, scheduler=scheduler, progress=progress)
    try:
        return check(spec, result)
    except TooFewSteps as exc:
        raise input_error(", ".join(str(p) for p in logs), "too-few-steps", str(exc)) from None
