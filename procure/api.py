"""Thin orchestration: inputs -> measure -> model -> economics -> result document -> reports.

Every function here is what one CLI command does, without printing. Errors are ProcureErrors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from procure.errors import PolicyError, input_error

if TYPE_CHECKING:
    from procure.document import QuoteDocument
    from procure.inputs.bundle import Inputs


def load_inputs(path: Path | str, allow_paths: list[Path] | None = None,
                price_books: list[Path] | None = None) -> "Inputs":
    """Read, validate and cross-check cluster.yaml; every problem at once as InputError."""
    from procure.inputs.bundle import load_inputs as load

    return load(path, allow_paths, price_books)


def validate(path: Path | str, allow_paths: list[Path] | None = None,
             price_books: list[Path] | None = None) -> Inputs:
    return load_inputs(path, allow_paths, price_books)


def estimate(path: Path | str, bid_id: str | None = None, allow_paths: list[Path] | None = None) -> dict:
    from procure.catalog.calibration import load_knobs
    from procure.pipeline import critical_batch, estimate_bid

    inputs = load_inputs(path, allow_paths)
    bids = [b for b in inputs.bids if bid_id is None or b.bid.id == bid_id]
    if not bids:
        known = ", ".join(b.bid.id for b in inputs.bids)
        raise input_error(str(path), "unknown-bid", f"no bid {bid_id!r} (bids: {known})")
    out, critical = [], critical_batch(inputs)
    for rb in bids:
        est, batch = estimate_bid(inputs, rb, None, load_knobs(), critical)
        entry = {"id": rb.bid.id, "accelerator": rb.accelerator.id, "gpus": rb.bid.gpus,
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


def quote_document(path: Path | str, allow_paths: list[Path] | None = None, progress=None,
                   basis: str | None = None, price_books: list[Path] | None = None) -> QuoteDocument:
    from procure.pipeline import build_document

    inputs = load_inputs(path, allow_paths, price_books)
    return build_document(inputs, progress=progress, basis=basis)


def quote(path: Path | str, out_dir: Path, formats: list[str], *, templates_dir: Path | None = None,
          lang: str = "en", page_size: str = "A4", force: bool = False,
          allow_paths: list[Path] | None = None, fail_on: list[str] | None = None,
          progress=None, basis: str | None = None, price_books: list[Path] | None = None) -> QuoteResult:
    from procure.economics import FLAG_CODES
    from procure.sources.suggest import suggest
    from procure.report import FORMATS, render

    _check_formats(formats, FORMATS)
    for code in fail_on or []:
        if code not in FLAG_CODES:
            raise input_error("--fail-on", "unknown-flag", f"{code!r} is not a flag{suggest(code, FLAG_CODES)}")
    if templates_dir is not None and not Path(templates_dir).is_dir():
        raise input_error("--templates", "not-found", f"templates folder {templates_dir} does not exist")
    from procure.pipeline import build_document

    inputs = load_inputs(path, allow_paths, price_books)
    document = build_document(inputs, progress=progress, basis=basis)
    slug = slugify(document.title) or Path(path).stem
    attachments = _attachments(inputs)
    written = render(document, formats, Path(out_dir), slug, templates_dir=templates_dir, lang=lang,
                     page_size=page_size, force=force, attachments=attachments)
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


def render_saved(result_json: Path, out_dir: Path, formats: list[str], **options) -> list[Path]:
    from procure.report import FORMATS, render

    _check_formats(formats, FORMATS)
    document = read_quote(Path(result_json))
    slug = slugify(document.title) or Path(result_json).stem
    return render(document, formats, Path(out_dir), slug, **options)


def read_quote(path: Path) -> QuoteDocument:
    """A saved result document, any known version, validated against the schema."""
    from procure.document import load_quote
    from procure.jsontext import MAX_JSON_BYTES
    from procure.sources.files import read_bytes_limited

    return load_quote(read_bytes_limited(Path(path), str(path), MAX_JSON_BYTES), str(path))


def backtest(runs_path: Path | str) -> dict:
    from procure.pipeline import run_backtest

    return run_backtest(Path(runs_path))


def ingest(paths: list[Path], fmt: str | None = None, scheduler: str | None = None, progress=None) -> dict:
    from procure.measure import ingest as measure_ingest

    return measure_ingest(paths, fmt=fmt, scheduler=scheduler, progress=progress).to_dict()


def catalog_list(kind: str = "all") -> dict:
    from procure.catalog.views import list_entries

    return list_entries(kind)


def catalog_show(entry_id: str) -> dict:
    from procure.catalog.views import show_entry

    return show_entry(entry_id)


def diff(old: Path, new: Path) -> dict:
    from procure.compare_rounds import diff_documents

    return diff_documents(*(read_quote(Path(p)).to_data() for p in (old, new)))


def _check_formats(formats: list[str], known) -> None:
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
