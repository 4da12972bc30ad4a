"""Everything a quote reads, validated and resolved: the typed hand-over from the inputs layer."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from procure.catalog.load import Catalog, default_catalog, load_user_price_books
from procure.catalog.types import ModelArch
from procure.errors import Diagnostic, InputError
from procure.inputs.checks import check_cluster, price_book_folders
from procure.inputs.crossfield import check_cross_fields, superseded
from procure.inputs.resolve import ResolvedBid, resolve_bids, workload_arch
from procure.inputs.responses import ResponseFile, read_responses
from procure.inputs.schema import Cluster
from procure.sources.files import read_bytes_limited
from procure.sources.validate import validate_document
from procure.sources.yamlpos import YamlDocument, read_yaml


@dataclass(frozen=True)
class Inputs:
    path: Path
    cluster: Cluster
    doc: YamlDocument
    catalog: Catalog
    bids: list[ResolvedBid]
    arch: ModelArch
    raw: bytes = b""
    responses: tuple[ResponseFile, ...] = ()     # vendors' filled forms read as bids (--responses)


def with_user_price_books(cat: Catalog, folders: list[Path], problems: list[Diagnostic]) -> Catalog:
    """The catalog plus the price books of ``folders`` (same schema and checks as the shipped ones)."""
    for folder in folders:
        books, files, found = load_user_price_books(folder, cat)
        problems.extend(found)
        cat = cat.with_price_books(books, files)
    return cat


def load_inputs(path: Path | str, allow_paths: list[Path] | None = None,
                price_books: list[Path] | None = None, responses: Path | None = None,
                model: type[Cluster] = Cluster) -> Inputs:
    """Read, validate and cross-check cluster.yaml; every problem at once as one InputError.

    ``price_books``: folders of the user's own price books (``--price-books``), read with the
    `price_books:` folders that cluster.yaml names. ``model``: ``RequestCluster`` for an RFQ,
    whose bids may be absent."""
    path = Path(path)
    doc = read_yaml(path, str(path))
    base = path.resolve().parent
    allowed = [base] + [Path(p).expanduser().resolve() for p in (allow_paths or [])]
    problems: list[Diagnostic] = []
    folders = [Path(p).expanduser().resolve() for p in (price_books or [])]
    folders += price_book_folders(doc, base, allowed, problems)
    cat = with_user_price_books(default_catalog(), list(dict.fromkeys(folders)), problems)
    files: tuple[ResponseFile, ...] = ()
    if responses is not None:
        doc, files = _with_responses(doc, Path(responses), cat, problems)
    cluster = None
    try:
        cluster = validate_document(doc, model)
    except InputError as exc:
        problems.extend(exc.diagnostics)
    across = check_cross_fields(doc)    # in the same pass, not after the fields are fixed
    problems = [p for p in problems if not superseded(p, across)] + across
    problems.extend(check_cluster(doc, cat, base, allowed))
    if problems or cluster is None:
        raise InputError(sorted(set(problems)))
    return Inputs(path, cluster, doc, cat, resolve_bids(cluster, cat, base, allowed),
                  workload_arch(cluster, cat), read_bytes_limited(path, str(path)), files)


def _with_responses(doc: YamlDocument, folder: Path, cat: Catalog,
                    problems: list[Diagnostic]) -> tuple[YamlDocument, tuple[ResponseFile, ...]]:
    """cluster.yaml with the vendors' responses appended to its bids (each checked on its own
    first, so that every problem is reported at its place in the response)."""
    data = dict(doc.data) if isinstance(doc.data, dict) else {}
    found_bids = data.get("bids")
    inline: list[Any] = found_bids if isinstance(found_bids, list) else []
    taken = {str(b.get("id")) for b in inline if isinstance(b, dict) and b.get("id") is not None}
    try:
        read = read_responses(folder, taken, data, cat)
    except InputError as exc:
        problems.extend(exc.diagnostics)
        return doc, ()
    data["bids"] = list(inline) + read.bids
    return YamlDocument(doc.source, data, doc.positions), tuple(read.files)

