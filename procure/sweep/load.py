"""sweep.yaml -> a validated, cross-checked ``SweepSpec``; every problem at once, with its
``file:line:col``.

A price term is checked by the quote's own ``inputs.checks.check_pricing`` (unknown book or
term, kind mismatch, a book dated after ``as_of``, FX), run on a view of the sweep document in
which ``terms[j]`` reads as ``bids[j].pricing``: the same rules and messages as in cluster.yaml,
with the sweep's line numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from procure.catalog.load import Catalog, default_catalog
from procure.errors import Diagnostic, InputError
from procure.inputs.bundle import with_user_price_books
from procure.inputs.checks import check_currency, check_pricing, price_book_folders
from procure.sources.validate import validate_document
from procure.sources.yamlpos import YamlDocument, read_yaml
from procure.sweep.schema import AcceleratorChoice, SweepSpec


@dataclass(frozen=True)
class SweepInputs:
    path: Path
    spec: SweepSpec
    doc: YamlDocument
    catalog: Catalog
    raw: bytes


def load_sweep(path: Path | str) -> SweepInputs:
    """Read, validate and cross-check sweep.yaml; every problem at once as one InputError."""
    path = Path(path)
    doc = read_yaml(path, str(path))
    base = path.resolve().parent
    problems: list[Diagnostic] = []
    # `price_books:` folders next to sweep.yaml, read and checked as a quote reads cluster.yaml's
    cat = with_user_price_books(default_catalog(), price_book_folders(doc, base, [base], problems), problems)
    _expand_term_shorthand(doc, cat)
    spec = None
    try:
        spec = validate_document(doc, SweepSpec)
    except InputError as exc:
        problems.extend(exc.diagnostics)
    problems.extend(check_sweep(doc, cat))
    if problems or spec is None:
        raise InputError(sorted(set(problems)))
    return SweepInputs(path, spec, doc, cat, path.read_bytes())


def _expand_term_shorthand(doc: YamlDocument, cat: Catalog) -> None:
    """``aws-2026q3/on-demand`` -> ``{price_book: aws-2026q3, term: on-demand, kind: <the book's>}``."""
    terms = doc.data.get("terms") if isinstance(doc.data, dict) else None
    if not isinstance(terms, list):
        return
    for j, term in enumerate(terms):
        if isinstance(term, str) and term.count("/") == 1:
            book_id, line = (part.strip() for part in term.split("/"))
            entry: dict[str, Any] = {"price_book": book_id, "term": line}
            book = cat.price_books.get(book_id)
            entry["kind"] = book.kind if book is not None else "rental"
            terms[j] = entry
        elif isinstance(term, str):
            terms[j] = {"price_book": term}   # the schema then asks for the `term`


# ---------------------------------------------------------------- cross-checks

def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def check_sweep(doc: YamlDocument, cat: Catalog) -> list[Diagnostic]:
    data: dict[str, Any] = doc.data if isinstance(doc.data, dict) else {}
    as_of = data.get("as_of") if isinstance(data.get("as_of"), date) else None
    out: list[Diagnostic] = []
    _check_models(data, doc, cat, out)
    check_currency(data, doc, cat, as_of, out)
    _check_accelerators(data, doc, cat, out)
    _check_networks(data.get("networks"), ("networks",), doc, cat, out)
    _check_terms(data, doc, cat, as_of, out)
    return out


def _check_models(data: dict[str, Any], doc: YamlDocument, cat: Catalog, out: list[Diagnostic]) -> None:
    workloads = data.get("workloads")
    for i, w in enumerate(workloads if isinstance(workloads, list) else []):
        model = _str(w.get("model")) if isinstance(w, dict) else None
        if model is not None and model not in cat.models:
            out.append(doc.diagnostic(("workloads", i, "model"), "unknown-model",
                                      f"model preset {model!r} is not in the catalog"
                                      f"{cat.did_you_mean('model', model)} (or give an inline `architecture:`)"))


def _check_networks(networks: Any, where: tuple[Any, ...], doc: YamlDocument, cat: Catalog,
                    out: list[Diagnostic]) -> None:
    for k, net in enumerate(networks if isinstance(networks, list) else []):
        if _str(net) is not None and net not in cat.networks:
            out.append(doc.diagnostic(where + (k,), "unknown-network",
                                      f"{net!r} is not in the catalog{cat.did_you_mean('network', net)}"))


def _check_accelerators(data: dict[str, Any], doc: YamlDocument, cat: Catalog, out: list[Diagnostic]) -> None:
    chosen = data.get("accelerators")
    has_networks = isinstance(data.get("networks"), list)
    for i, entry in enumerate(chosen if isinstance(chosen, list) else []):
        accel = _str(entry) or (_str(entry.get("id")) if isinstance(entry, dict) else None)
        where = ("accelerators", i) + (("id",) if isinstance(entry, dict) else ())
        if accel is None:
            continue
        if accel not in cat.accelerators:
            out.append(doc.diagnostic(where, "unknown-accelerator",
                                      f"{accel!r} is not in the catalog{cat.did_you_mean('accelerator', accel)}"))
            continue
        own = entry.get("networks") if isinstance(entry, dict) else None
        _check_networks(own, ("accelerators", i, "networks"), doc, cat, out)
        if own is None and not has_networks and cat.accelerators[accel].default_network is None:
            out.append(doc.diagnostic(where, "missing-network",
                                      f"{accel} has no default network: give `networks`"))


def _term_view(doc: YamlDocument, data: dict[str, Any]) -> YamlDocument:
    """The sweep document seen as a cluster.yaml whose bids[j].pricing is terms[j]."""
    terms: list[Any] = data["terms"] if isinstance(data.get("terms"), list) else []
    positions: dict[tuple[Any, ...], tuple[int, int]] = {}
    for path, pos in doc.positions.items():
        key = path[:1] == ("<key>",)
        rest = path[1:] if key else path
        if rest[:1] == ("terms",) and len(rest) >= 2:
            mapped = ("bids", rest[1], "pricing") + tuple(rest[2:])
            positions[(("<key>",) if key else ()) + mapped] = pos
        elif not key:
            positions[path] = pos
    view = {"currency": data.get("currency"), "bids": [{"pricing": t} for t in terms]}
    return YamlDocument(doc.source, view, positions)


def _check_terms(data: dict[str, Any], doc: YamlDocument, cat: Catalog, as_of: date | None,
                 out: list[Diagnostic]) -> None:
    view = _term_view(doc, data)
    view_data: dict[str, Any] = view.data   # type: ignore[assignment]
    for j, bid in enumerate(view_data["bids"]):
        check_pricing(j, bid, view_data, view, cat, as_of, out)
        term = bid["pricing"]
        parts = term.get("accelerators") if isinstance(term, dict) else None
        for k, accel in enumerate(parts if isinstance(parts, list) else []):
            if _str(accel) is not None and accel not in cat.accelerators:
                out.append(doc.diagnostic(("terms", j, "accelerators", k), "unknown-accelerator",
                                          f"{accel!r} is not in the catalog"
                                          f"{cat.did_you_mean('accelerator', accel)}"))


def accelerator_choices(spec: SweepSpec, cat: Catalog) -> list[AcceleratorChoice]:
    """The candidate accelerators as choices (``all``: every part in the catalog with a network)."""
    if spec.accelerators == "all":
        return [AcceleratorChoice(id=a) for a in sorted(cat.accelerators)
                if spec.networks or cat.accelerators[a].default_network]
    return [c if isinstance(c, AcceleratorChoice) else AcceleratorChoice(id=c) for c in spec.accelerators]
