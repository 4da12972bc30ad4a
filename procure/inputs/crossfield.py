"""The rules of cluster.yaml across fields (``procure.inputs.rules``), checked on the data as YAML
read it, so that they are reported in the same pass as every other problem.

pydantic runs a model's validator only when all of that model's fields are valid (and the bids
list's only when every bid is), so a duplicate bid id or a batch that is not a multiple of
``seq_len`` would appear only after the other problems were fixed. Here the same rules always
run; ``superseded`` then drops the schema's copy of a rule reported here (by the rule's name), so
each problem is printed once, at the field it is about.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import date

from procure.errors import Diagnostic
from procure.inputs import rules
from procure.inputs.rules import Broken
from procure.sources.bounds import days_after
from procure.sources.yamlpos import YamlDocument, YamlPath

CODE = "invalid"   # the schema's code for a broken rule across fields
Raw = Mapping[str, object]   # a mapping of cluster.yaml as read, before (or despite) the schema
raw_int = rules.whole


def _report(doc: YamlDocument, where: YamlPath, broken: list[Broken], out: list[Diagnostic]) -> None:
    out += [replace(doc.diagnostic(where, CODE, b.message), rule=b.rule) for b in broken]


def check_workload(data: Raw, doc: YamlDocument, out: list[Diagnostic]) -> None:
    workload = data.get("workload")
    if not isinstance(workload, dict):
        return
    _batch_report(doc, ("workload",), rules.workload_rules(workload), out)
    phases = workload.get("phases")
    for i, phase in enumerate(phases if isinstance(phases, list) else []):
        if isinstance(phase, dict):
            _batch_report(doc, ("workload", "phases", i), rules.batch_rules(phase), out)


def _batch_report(doc: YamlDocument, where: YamlPath, broken: list[Broken], out: list[Diagnostic]) -> None:
    for b in broken:   # a batch that is not whole sequences is reported at the batch itself
        _report(doc, where + ("global_batch_tokens",) if b.rule == "whole-sequences" else where, [b], out)


def check_pricing(i: int, bid: Raw, doc: YamlDocument, out: list[Diagnostic]) -> None:
    pricing = bid.get("pricing")
    if isinstance(pricing, dict):
        _report(doc, ("bids", i, "pricing"), rules.pricing_rules(pricing), out)


def check_dates(data: Raw, doc: YamlDocument, out: list[Diagnostic]) -> None:
    """Dates that must come after as_of, and one way to say when a bid's capacity starts."""
    as_of = data.get("as_of")
    workload = data.get("workload")
    workload = workload if isinstance(workload, dict) else {}
    _report(doc, ("workload", "deadline"), rules.deadline_rules(as_of, workload.get("deadline")), out)
    days = workload.get("deadline_days")
    if isinstance(as_of, date) and _past_calendar(as_of, days):
        out.append(doc.diagnostic(("workload", "deadline_days"), CODE,
                                  f"as_of {as_of} plus {days} days is past {date.max}, the last date"))
    bids = data.get("bids")
    for i, bid in enumerate(bids if isinstance(bids, list) else []):
        if not isinstance(bid, dict):
            continue
        lead = bid.get("lead_time_days")
        if isinstance(as_of, date) and _past_calendar(as_of, lead):
            out.append(doc.diagnostic(("bids", i, "lead_time_days"), CODE,
                                      f"bid {bid.get('id')!r}: as_of {as_of} plus a lead time of {lead} days is "
                                      f"past {date.max}, the last date"))
        _report(doc, ("bids", i), rules.bid_start_rules(bid), out)
        _report(doc, ("bids", i, "available_from"),
                rules.available_rules(as_of, bid.get("id"), bid.get("available_from")), out)


def _past_calendar(start: date, days: object) -> bool:
    """A number of days that, added to ``start``, leaves the calendar (other values are the schema's)."""
    if isinstance(days, bool) or not isinstance(days, (int, float)) or not 0 <= days < 1e9:
        return False
    return days_after(start, float(days)) is None


def check_unique_ids(bids: list[object], doc: YamlDocument, out: list[Diagnostic]) -> None:
    ids = [bid.get("id") if isinstance(bid, dict) else None for bid in bids]
    for i, first, broken in rules.duplicate_ids(ids):
        line = doc.position(("bids", first, "id"))[0]
        _report(doc, ("bids", i, "id"), [broken._replace(message=f"{broken.message} (first on line {line})")], out)


def check_cross_fields(doc: YamlDocument) -> list[Diagnostic]:
    """Every rule across fields, whatever else is wrong with the document."""
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
    """True for the schema's report of a rule that ``found`` (the raw pass) reports too."""
    return bool(diagnostic.rule) and any(f.rule == diagnostic.rule for f in found)
