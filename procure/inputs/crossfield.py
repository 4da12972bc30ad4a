"""The schema's rules across fields, checked on the raw YAML data so they are reported in the same
pass as every other problem.

pydantic runs a model's cross-field validator only when all of that model's fields are valid (and
the bids list's only when every bid is), so a duplicate bid id or a batch that is not a multiple of
``seq_len`` used to appear only after the other problems were fixed. The same rules, checked here
on the data with type guards, always run; ``superseded`` then drops the schema's own copy of a
rule that fired (the same text), so each problem is printed once, at the field it is about.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime

from procure.errors import Diagnostic
from procure.sources.bounds import days_after
from procure.sources.yamlpos import YamlDocument

CODE = "invalid"   # the schema's code for a failed rule across fields
Raw = Mapping[str, object]   # a mapping of cluster.yaml as read, before (or despite) the schema


def raw_int(value: object) -> int | None:
    """An integer as YAML read it (YAML's true is not 1), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _given(mapping: Raw, key: str) -> bool:
    return mapping.get(key) is not None


def check_workload(data: Raw, doc: YamlDocument, out: list[Diagnostic]) -> None:
    workload = data.get("workload")
    if not isinstance(workload, dict):
        return
    where = ("workload",)
    if _given(workload, "model") == _given(workload, "architecture"):
        out.append(doc.diagnostic(where, CODE, "give exactly one of `model` (a preset id) or `architecture` (inline)"))
    if _given(workload, "global_batch_tokens") == _given(workload, "global_batch"):
        out.append(doc.diagnostic(where, CODE, "give exactly one of `global_batch_tokens` or `global_batch` (sequences)"))
    if _given(workload, "deadline") and _given(workload, "deadline_days"):
        out.append(doc.diagnostic(where, CODE, "give `deadline_days` or `deadline` (a date), not both"))
    tokens, seq_len = raw_int(workload.get("global_batch_tokens")), raw_int(workload.get("seq_len"))
    if tokens is not None and seq_len is not None and tokens > 0 and seq_len > 0 and tokens % seq_len:
        out.append(doc.diagnostic(where + ("global_batch_tokens",), CODE,
                                  f"global_batch_tokens {tokens} is not a multiple of seq_len {seq_len}"))


def _terms(pricing: Raw, names: tuple[str, ...]) -> str:
    return ", ".join(f"`{name}`" for name in names if _given(pricing, name))


def check_pricing(i: int, bid: Raw, doc: YamlDocument, out: list[Diagnostic]) -> None:
    from procure.inputs.schema import PURCHASE_TERMS, RENTAL_TERMS

    pricing = bid.get("pricing")
    if not isinstance(pricing, dict):
        return
    where = ("bids", i, "pricing")
    usd, local = _given(pricing, "usd_per_gpu_hour"), _given(pricing, "price_per_gpu_hour")
    book = _given(pricing, "price_book")

    def rule(message: str) -> None:
        out.append(doc.diagnostic(where, CODE, message))

    if usd and local:
        rule("give `usd_per_gpu_hour` or `price_per_gpu_hour` (with `currency`), not both")
    if (usd or local) and book:
        rule("give a `price_book` (with `term`) or an inline price, not both")
    if book and not _given(pricing, "term"):
        rule("a `price_book` needs a `term` (a line of that book)")
    if local and not _given(pricing, "currency"):
        rule("`price_per_gpu_hour` needs a `currency`")
    if pricing.get("kind") == "purchase":
        if usd or local:
            rule("a purchase is priced by `capex_per_gpu` (and `life_years`), not by a price per GPU-hour; "
                 "use `kind: rental` for a price per GPU-hour")
        if _terms(pricing, RENTAL_TERMS):
            rule(f"{_terms(pricing, RENTAL_TERMS)}: rental terms on a `kind: purchase` bid")
        if not book and not (_given(pricing, "capex_per_gpu") and _given(pricing, "life_years")):
            rule("a purchase needs a `price_book` and `term`, or inline `capex_per_gpu` and `life_years`")
    else:
        if _terms(pricing, PURCHASE_TERMS):
            rule(f"{_terms(pricing, PURCHASE_TERMS)}: purchase terms on a `kind: rental` bid")
        if not (usd or local or book):
            rule("give a `price_book` and `term`, or an inline `usd_per_gpu_hour`")


def check_dates(data: Raw, doc: YamlDocument, out: list[Diagnostic]) -> None:
    """Dates that must come after as_of, and one way to say when a bid's capacity starts."""
    raw_as_of = data.get("as_of")
    as_of = raw_as_of if isinstance(raw_as_of, date) and not isinstance(raw_as_of, datetime) else None
    workload = data.get("workload")
    deadline = workload.get("deadline") if isinstance(workload, dict) else None
    if as_of is not None and isinstance(deadline, date) and deadline <= as_of:
        out.append(doc.diagnostic(("workload", "deadline"), CODE,
                                  f"workload.deadline {deadline} is not after as_of {as_of}"))
    days = workload.get("deadline_days") if isinstance(workload, dict) else None
    if as_of is not None and _past_calendar(as_of, days):
        out.append(doc.diagnostic(("workload", "deadline_days"), CODE,
                                  f"as_of {as_of} plus {days} days is past {date.max}, the last date"))
    bids = data.get("bids")
    for i, bid in enumerate(bids if isinstance(bids, list) else []):
        if not isinstance(bid, dict):
            continue
        lead = bid.get("lead_time_days")
        if as_of is not None and _past_calendar(as_of, lead):
            out.append(doc.diagnostic(("bids", i, "lead_time_days"), CODE,
                                      f"bid {bid.get('id')!r}: as_of {as_of} plus a lead time of {lead} days is "
                                      f"past {date.max}, the last date"))
        if _given(bid, "lead_time_days") and _given(bid, "available_from"):
            out.append(doc.diagnostic(("bids", i), CODE, "give `lead_time_days` or `available_from` (a date), not both"))
        start = bid.get("available_from")
        if as_of is not None and isinstance(start, date) and start < as_of:
            out.append(doc.diagnostic(("bids", i, "available_from"), CODE,
                                      f"bid {bid.get('id')!r}: available_from {start} is before as_of {as_of}"))


def _past_calendar(start: date, days: object) -> bool:
    """A number of days that, added to ``start``, leaves the calendar (other values are the schema's)."""
    if isinstance(days, bool) or not isinstance(days, (int, float)) or not 0 <= days < 1e9:
        return False
    return days_after(start, float(days)) is None


def check_unique_ids(bids: list[object], doc: YamlDocument, out: list[Diagnostic]) -> None:
    first: dict[str, int] = {}
    for i, bid in enumerate(bids):
        bid_id = bid.get("id") if isinstance(bid, dict) else None
        if not isinstance(bid_id, str):
            continue
        if bid_id in first:
            line = doc.position(("bids", first[bid_id], "id"))[0]
            out.append(doc.diagnostic(("bids", i, "id"), CODE,
                                      f"bid id {bid_id!r} appears twice; ids must be unique (first on line {line})"))
        else:
            first[bid_id] = i


def check_cross_fields(doc: YamlDocument) -> list[Diagnostic]:
    """Every cross-field rule of the schema, whatever else is wrong with the document."""
    data = doc.data if isinstance(doc.data, dict) else {}
    out: list[Diagnostic] = []
    check_workload(data, doc, out)
    check_dates(data, doc, out)
    bids = data.get("bids")
    if isinstance(bids, list):
        for i, bid in enumerate(bids):
            if isinstance(bid, dict):
                check_pricing(i, bid, doc, out)
        check_unique_ids(bids, doc, out)
    return out


def superseded(diagnostic: Diagnostic, found: list[Diagnostic]) -> bool:
    """True for the schema's report of a rule ``found`` already reports (the same rule text)."""
    if diagnostic.code != CODE:
        return False
    rule = diagnostic.message.split(": ", 1)[-1]
    return any(f.message == rule or f.message.startswith(rule.split(";")[0]) for f in found if f.code == CODE)
