"""Cross-file checks of a validated cluster.yaml against the catalog and price books.

Each check is a small function that appends diagnostics; all run, so every problem is reported
at once. A known term with no line for a bid's accelerator is not an error: the bid gets the
``price-missing`` flag and stays in the comparison.
"""

from __future__ import annotations

from pathlib import Path

from procure.catalog.load import Catalog
from procure.errors import Diagnostic
from procure.inputs.loader import suggest
from procure.inputs.schema import Bid, Cluster
from procure.inputs.yamlpos import YamlDocument


def _bid_path(index: int, *rest) -> tuple:
    return ("bids", index) + rest


def check_workload(cluster: Cluster, doc: YamlDocument, cat: Catalog, out: list[Diagnostic]) -> None:
    model = cluster.workload.model
    if model is not None and model not in cat.models:
        out.append(doc.diagnostic(("workload", "model"), "unknown-model",
                                  f"model preset {model!r} is not in the catalog{cat.did_you_mean('model', model)}"
                                  " (or give an inline `architecture:`)"))


def check_currency(cluster: Cluster, doc: YamlDocument, cat: Catalog, out: list[Diagnostic]) -> None:
    fx = cat.fx_for(cluster.as_of)
    if cluster.currency == "USD":
        return
    if fx is None:
        out.append(doc.diagnostic(("as_of",), "no-fx", f"no FX table is dated on or before {cluster.as_of}"))
    elif cluster.currency not in fx.rates:
        out.append(doc.diagnostic(("currency",), "unknown-currency",
                                  f"currency {cluster.currency!r} is not in the FX table of {fx.as_of}"
                                  f"{suggest(cluster.currency, fx.rates)}"))


def check_hardware(i: int, bid: Bid, doc: YamlDocument, cat: Catalog, out: list[Diagnostic]) -> None:
    if bid.accelerator not in cat.accelerators:
        out.append(doc.diagnostic(_bid_path(i, "accelerator"), "unknown-accelerator",
                                  f"{bid.accelerator!r} is not in the catalog"
                                  f"{cat.did_you_mean('accelerator', bid.accelerator)}"))
    elif bid.network is None and cat.accelerators[bid.accelerator].default_network is None:
        out.append(doc.diagnostic(_bid_path(i), "missing-network",
                                  f"bid {bid.id!r} names no `network` and {bid.accelerator} has no default"))
    if bid.network is not None and bid.network not in cat.networks:
        out.append(doc.diagnostic(_bid_path(i, "network"), "unknown-network",
                                  f"{bid.network!r} is not in the catalog{cat.did_you_mean('network', bid.network)}"))


def check_pricing(i: int, bid: Bid, cluster: Cluster, doc: YamlDocument, cat: Catalog,
                  out: list[Diagnostic]) -> None:
    pricing = bid.pricing
    if pricing.price_book is None:
        if pricing.currency and pricing.currency != cluster.currency:
            fx = cat.fx_for(cluster.as_of)
            if fx is None or pricing.currency not in fx.rates:
                out.append(doc.diagnostic(_bid_path(i, "pricing", "currency"), "unknown-currency",
                                          f"no FX rate for {pricing.currency!r} on or before {cluster.as_of}"))
        return
    book = cat.price_books.get(pricing.price_book)
    if book is None:
        out.append(doc.diagnostic(_bid_path(i, "pricing", "price_book"), "unknown-price-book",
                                  f"price book {pricing.price_book!r} is not shipped"
                                  f"{cat.did_you_mean('price book', pricing.price_book)}"))
        return
    if book.kind != pricing.kind:
        out.append(doc.diagnostic(_bid_path(i, "pricing", "price_book"), "kind-mismatch",
                                  f"price book {book.id!r} is a {book.kind} book but the bid says kind: {pricing.kind}"))
    if book.effective > cluster.as_of:
        out.append(doc.diagnostic(_bid_path(i, "pricing", "price_book"), "price-book-future",
                                  f"price book {book.id!r} takes effect {book.effective}, after as_of "
                                  f"{cluster.as_of}; pick an older book or a later as_of"))
    terms = sorted({line.term for line in book.lines})
    if pricing.term not in terms:
        out.append(doc.diagnostic(_bid_path(i, "pricing", "term"), "unknown-term",
                                  f"price book {book.id!r} has no term {pricing.term!r}"
                                  f"{suggest(pricing.term, terms)} (terms: {', '.join(terms)})"))
    fx = cat.fx_for(cluster.as_of)
    if book.currency != cluster.currency and (fx is None or book.currency not in fx.rates
                                              or cluster.currency not in fx.rates):
        out.append(doc.diagnostic(_bid_path(i, "pricing", "price_book"), "unknown-currency",
                                  f"no FX rate to convert {book.currency} to {cluster.currency} on {cluster.as_of}"))


def check_plan(i: int, bid: Bid, doc: YamlDocument, out: list[Diagnostic]) -> None:
    plan = bid.plan
    if plan == "auto":
        return
    parts = [plan.tp, plan.pp, plan.dp, plan.cp or 1]
    if all(p is not None for p in parts):
        product = parts[0] * parts[1] * parts[2] * parts[3]
        if product != bid.gpus:
            out.append(doc.diagnostic(_bid_path(i, "plan"), "plan-mismatch",
                                      f"tp×pp×dp×cp = {product} but the bid has {bid.gpus} GPUs"))


def resolve_measured(path_text: str, base: Path, allowed: list[Path]) -> Path:
    """The measured-log path relative to the cluster.yaml folder; raise ValueError if not allowed."""
    candidate = Path(path_text).expanduser()
    resolved = (candidate if candidate.is_absolute() else base / candidate).resolve()
    if not any(resolved == root or root in resolved.parents for root in allowed):
        roots = ", ".join(str(r) for r in allowed)
        raise ValueError(f"{path_text!r} resolves to {resolved}, outside the allowed folders ({roots}); "
                         "pass --allow-path to permit it")
    if not resolved.exists():
        raise FileNotFoundError(f"measured log {path_text!r} does not exist ({resolved})")
    return resolved


def check_measured(i: int, bid: Bid, doc: YamlDocument, base: Path, allowed: list[Path],
                   out: list[Diagnostic]) -> None:
    for j, text in enumerate(bid.measured):
        try:
            resolve_measured(text, base, allowed)
        except FileNotFoundError as exc:
            out.append(doc.diagnostic(_bid_path(i, "measured", j), "not-found", str(exc)))
        except ValueError as exc:
            out.append(doc.diagnostic(_bid_path(i, "measured", j), "path-not-allowed", str(exc)))


def check_cluster(cluster: Cluster, doc: YamlDocument, cat: Catalog, base: Path,
                  allowed: list[Path]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    check_workload(cluster, doc, cat, out)
    check_currency(cluster, doc, cat, out)
    for i, bid in enumerate(cluster.bids):
        check_hardware(i, bid, doc, cat, out)
        check_pricing(i, bid, cluster, doc, cat, out)
        check_plan(i, bid, doc, out)
        check_measured(i, bid, doc, base, allowed, out)
    return out
