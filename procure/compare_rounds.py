"""`procure diff`: what moved between two rounds of bids (two procure.quote/v2 documents).

Inputs and results are compared apart, so a reader sees the cause next to the effect: a price
6.88 -> 3.95 (an input) beside the total cost it moved (a result). Every change carries the raw
old and new values (money stays Decimal), its delta and relative change, and a ``kind`` that tells
a renderer how to format it (money in the report's format, seconds, days, a percentage, text).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Callable, NotRequired, TypedDict

SCHEMA = "procure.diff/v2"

Doc = dict[str, Any]   # a procure.quote/v2 document (or a part of one) as plain data
# (field path in a bid, label, kind); kind "money" is in the bid's (report) currency; "book_money" is a
# price, in the currency its change names
FieldSpec = tuple[tuple[str, ...], str, str]


class CurrencyPair(TypedDict):
    old: str | None
    new: str | None


class Change(TypedDict):
    field: str
    label: str
    kind: str                  # how to format old and new: text, count, seconds, days, percent, number, money...
    old: object                # as saved (money stays Decimal)
    new: object
    delta: Decimal | None      # None for text or when a side is missing
    relative: float | None
    currency: NotRequired[CurrencyPair]   # money kinds only


class BidChanges(TypedDict):
    id: str
    inputs: list[Change]
    results: list[Change]
    flags_added: list[str]
    flags_removed: list[str]


class Side(TypedDict):
    file: str | None
    title: object
    as_of: object
    currency: object


class RankingChange(TypedDict):
    old: list[str]
    new: list[str]
    changed: bool
    winner_changed: bool


class Diff(TypedDict):
    schema: str
    old: Side
    new: Side
    inputs: list[Change]
    added: list[str]
    removed: list[str]
    changed: list[BidChanges]
    ranking: RankingChange


BID_INPUTS: tuple[FieldSpec, ...] = (
    (("vendor",), "vendor", "text"),
    (("accelerator", "id"), "accelerator", "text"),
    (("gpus",), "GPUs", "count"),
    (("network", "id"), "network", "text"),
    (("pricing", "kind"), "pricing", "text"),
    (("pricing", "price_book"), "price book", "text"),
    (("pricing", "term"), "term", "text"),
    (("pricing", "min_commit_months"), "minimum commitment (months)", "count"),
    (("committed", "step_time_s"), "committed step time", "seconds"),
    (("committed", "p99_step_time_s"), "committed P99 step time", "seconds"),
    (("committed", "scaling_efficiency"), "committed scaling efficiency", "percent"),
    (("plan_origin",), "plan", "text"),
    (("measured", "step_time_s", "mean"), "measured mean step time", "seconds"),
    (("measured", "step_time_s", "p99"), "measured P99 step time", "seconds"),
)
BID_RESULTS: tuple[FieldSpec, ...] = (
    (("rank",), "rank", "count"),
    (("step_time_s",), "step time", "seconds"),
    (("time_to_train_days",), "time to train", "days"),
    (("total_cost",), "total cost", "money"),
    (("cost_per_million_tokens",), "cost per million tokens", "rate"),
    (("mfu",), "MFU", "percent"),
)
WORKLOAD_INPUTS: tuple[FieldSpec, ...] = (
    (("model", "id"), "model", "text"),
    (("seq_len",), "sequence length", "count"),
    (("global_batch_tokens",), "global batch (tokens)", "count"),
    (("train_tokens",), "training tokens", "count"),
    (("precision",), "precision", "text"),
    (("deadline_days",), "deadline", "days"),
)


def _get(data: object, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _num(value: object) -> Decimal | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, Decimal):
        return value
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    return None


def _change(field: str, label: str, kind: str, old: object, new: object,
            currency: tuple[str | None, str | None]) -> Change:
    o, n = _num(old), _num(new)
    across = kind in ("money", "rate", "book_money") and currency[0] != currency[1]
    delta = None if o is None or n is None or kind == "text" or across else n - o
    relative = None if delta is None or o is None or o == 0 else float(delta / o)
    out: Change = {"field": field, "label": label, "kind": kind, "old": old, "new": new, "delta": delta,
                   "relative": relative}
    if kind in ("money", "rate", "book_money"):
        out["currency"] = {"old": currency[0], "new": currency[1]}
    return out


def _same(a: object, b: object) -> bool:
    """Equal values; numbers by value (a saved float and the Decimal it was written from are equal)."""
    na, nb = _num(a), _num(b)
    return na == nb if na is not None and nb is not None else a == b


def _compare(old: Doc, new: Doc, spec: tuple[FieldSpec, ...], currency: Callable[[Doc, str], str | None],
             prefix: str = "") -> list[Change]:
    changes = []
    for path, label, kind in spec:
        a, b = _get(old, path), _get(new, path)
        if not _same(a, b):
            changes.append(_change(prefix + ".".join(path), label, kind, a, b,
                                   (currency(old, kind), currency(new, kind))))
    return changes


def _bid_currency(bid: Doc, kind: str) -> str | None:
    return bid.get("currency")


# prices a bid document carries converted into the report currency; the quoted price is the input
CONVERTED_PRICES = (("price_per_gpu_hour", "price per GPU-hour"), ("capex_per_gpu", "capex per GPU"))
COVERED_TERMS = ("min_commit_months",)      # compared among BID_INPUTS


def _quoted(bid: Doc) -> dict[str, Doc]:
    return {str(q.get("key")): q for q in _get(bid, ("pricing", "quoted")) or [] if isinstance(q, dict)}


def _rates(bid: Doc) -> dict[str, object]:
    """Report-currency units per unit of each currency the bid was quoted in."""
    pricing = _get(bid, ("pricing",)) or {}
    rates: dict[str, object] = {}
    if pricing.get("book_currency") and pricing.get("fx_rate") is not None:
        rates[str(pricing["book_currency"])] = pricing["fx_rate"]
    for q in _quoted(bid).values():
        if q.get("currency") and q.get("fx_rate") is not None:
            rates.setdefault(str(q["currency"]), q["fx_rate"])
    return rates


def _pricing_changes(a: Doc, b: Doc) -> list[Change]:
    """Every pricing input that changed, each in its own currency: a quoted price as quoted (a EUR
    price moving 4.20 -> 4.80 is EUR 4.20 -> EUR 4.80), an exchange rate that moved apart from the
    prices (a converted price that moved only because the rate did is not a price change), a
    converted price (in the report currency) only where neither explains its move, and the terms."""
    out: list[Change] = []
    qa, qb = _quoted(a), _quoted(b)
    for key in sorted(set(qa) | set(qb)):
        x, y = qa.get(key) or {}, qb.get(key) or {}
        if not _same(x.get("quoted"), y.get("quoted")) or x.get("currency") != y.get("currency"):
            label = str(y.get("label") or x.get("label") or key)
            out.append(_change(f"pricing.quoted.{key}", f"{label} (as quoted)", "book_money", x.get("quoted"),
                               y.get("quoted"), (x.get("currency"), y.get("currency"))))
    ra, rb = _rates(a), _rates(b)
    moved_fx = set()
    if a.get("currency") == b.get("currency"):
        for ccy in sorted(set(ra) & set(rb)):
            if ccy != a.get("currency") and not _same(ra[ccy], rb[ccy]):
                moved_fx.add(ccy)
                out.append(_change(f"pricing.fx_rate.{ccy}", f"exchange rate ({a.get('currency')} per {ccy})",
                                   "number", ra[ccy], rb[ccy], (None, None)))
    for key, label in CONVERTED_PRICES:
        x, y = _get(a, ("pricing", key)), _get(b, ("pricing", key))
        quoted_moved = f"pricing.quoted.{key}" in {c["field"] for c in out}
        ccy_a, ccy_b = (qa.get(key) or {}).get("currency"), (qb.get(key) or {}).get("currency")
        fx_moved = ccy_a is not None and ccy_a == ccy_b and ccy_a in moved_fx
        if not _same(x, y) and not quoted_moved and not fx_moved:
            out.append(_change(f"pricing.{key}", label, "book_money", x, y, (a.get("currency"), b.get("currency"))))
    ta, tb = _get(a, ("pricing", "terms")) or {}, _get(b, ("pricing", "terms")) or {}
    for key in sorted((set(ta) | set(tb)) - set(COVERED_TERMS)):
        if not _same(ta.get(key), tb.get(key)):
            out.append(_change(f"pricing.terms.{key}", key.replace("_", " "), "number", ta.get(key), tb.get(key),
                               (None, None)))
    return out


def _assumptions(old: Doc, new: Doc) -> list[Change]:
    a = {str(x.get("key")): x for x in old.get("assumptions") or []}
    b = {str(x.get("key")): x for x in new.get("assumptions") or []}
    out = []
    for key in sorted(set(a) | set(b)):
        va, vb = (a.get(key) or {}).get("value"), (b.get(key) or {}).get("value")
        if not _same(va, vb):
            label = (b.get(key) or a.get(key) or {}).get("label") or key
            out.append(_change(f"assumptions.{key}", str(label), "number", va, vb, (None, None)))
    return out


def _flags(bid: Doc) -> list[str]:
    return sorted(str(f.get("code")) for f in bid.get("flags") or [])


def diff_documents(old: Doc, new: Doc, old_file: str | None = None, new_file: str | None = None) -> Diff:
    old_bids = {b["id"]: b for b in old.get("bids", [])}
    new_bids = {b["id"]: b for b in new.get("bids", [])}
    changed: list[BidChanges] = []
    for bid_id in [b for b in new_bids if b in old_bids]:
        a, b = old_bids[bid_id], new_bids[bid_id]
        inputs = _compare(a, b, BID_INPUTS, _bid_currency) + _pricing_changes(a, b)
        results = _compare(a, b, BID_RESULTS, _bid_currency)
        flags_a, flags_b = _flags(a), _flags(b)
        if inputs or results or flags_a != flags_b:
            changed.append({"id": bid_id, "inputs": inputs, "results": results,
                            "flags_added": sorted(set(flags_b) - set(flags_a)),
                            "flags_removed": sorted(set(flags_a) - set(flags_b))})
    workload = _compare(old.get("workload") or {}, new.get("workload") or {}, WORKLOAD_INPUTS, lambda d, k: None,
                        prefix="workload.")
    old_rank, new_rank = list(old.get("ranking", [])), list(new.get("ranking", []))
    return {
        "schema": SCHEMA,
        "old": _side(old, old_file),
        "new": _side(new, new_file),
        "inputs": workload + _assumptions(old, new),
        "added": sorted(set(new_bids) - set(old_bids)),
        "removed": sorted(set(old_bids) - set(new_bids)),
        "changed": changed,
        "ranking": {"old": old_rank, "new": new_rank, "changed": old_rank != new_rank,
                    "winner_changed": (old_rank or [None])[0] != (new_rank or [None])[0]},
    }


def _side(doc: Doc, file: str | None) -> Side:
    return {"file": file, "title": doc.get("title"), "as_of": doc.get("as_of"), "currency": doc.get("currency")}
