"""The rules of cluster.yaml that span several fields, stated once.

Each rule reads a mapping: the data as YAML read it (``crossfield``, which reports every rule
whatever else is wrong, at the field it is about) or a validated model's fields (the schema's
validators, which guard every other reader of the schema: sweeps, responses). Both report a
broken rule as ``Broken(rule, message)``; ``bundle.load_inputs`` drops the schema's copy of a rule
the raw pass already reported, by the rule's name.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import NamedTuple

Fields = Mapping[str, object]

RENTAL_TERMS = ("min_commit_months", "discount_fraction", "prepay_fraction", "storage_per_gpu_hour",
                "network_per_gpu_hour", "support_fraction")
PURCHASE_TERMS = ("capex_per_gpu", "capex_per_node", "network_capex_per_gpu", "network_capex", "life_years",
                  "residual_fraction", "resale_decline_per_year", "power_per_kwh", "pue", "colo_per_kw_month",
                  "staff_per_year", "support_per_gpu_year", "cost_of_capital")


class Broken(NamedTuple):
    rule: str        # the rule's name: the same in the raw pass and the schema's
    message: str


class CrossFieldRule(ValueError):
    """A broken rule raised by a schema validator (pydantic keeps the exception: the rule's name
    reaches the diagnostic)."""

    def __init__(self, broken: Broken) -> None:
        super().__init__(broken.message)
        self.rule = broken.rule


def raise_first(broken: list[Broken]) -> None:
    """For a validator: raise the first broken rule (pydantic reports one per model)."""
    if broken:
        raise CrossFieldRule(broken[0])


def given(fields: Fields, key: str) -> bool:
    return fields.get(key) is not None


def whole(value: object) -> int | None:
    """An integer as YAML read it (YAML's true is not 1), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def batch_rules(fields: Fields) -> list[Broken]:
    """A workload's or a phase's batch: one way of giving it, in whole sequences."""
    out = []
    if given(fields, "global_batch_tokens") == given(fields, "global_batch"):
        out.append(Broken("one-batch", "give exactly one of `global_batch_tokens` or `global_batch` (sequences)"))
    tokens, seq_len = whole(fields.get("global_batch_tokens")), whole(fields.get("seq_len"))
    if tokens is not None and seq_len is not None and tokens > 0 and seq_len > 0 and tokens % seq_len:
        out.append(Broken("whole-sequences", f"global_batch_tokens {tokens} is not a multiple of seq_len {seq_len}"))
    return out


def workload_rules(fields: Fields) -> list[Broken]:
    out = []
    if given(fields, "model") == given(fields, "architecture"):
        out.append(Broken("one-model", "give exactly one of `model` (a preset id) or `architecture` (inline)"))
    out += batch_rules(fields)
    if given(fields, "deadline") and given(fields, "deadline_days"):
        out.append(Broken("one-deadline", "give `deadline_days` or `deadline` (a date), not both"))
    return out


def _named(fields: Fields, names: tuple[str, ...]) -> str:
    return ", ".join(f"`{name}`" for name in names if given(fields, name))


def pricing_rules(fields: Fields) -> list[Broken]:
    """How a bid is priced: a price-book line or an inline price, with the terms of its kind."""
    usd, local = given(fields, "usd_per_gpu_hour"), given(fields, "price_per_gpu_hour")
    book = given(fields, "price_book")
    out = []
    if usd and local:
        out.append(Broken("one-price", "give `usd_per_gpu_hour` or `price_per_gpu_hour` (with `currency`), not both"))
    if (usd or local) and book:
        out.append(Broken("book-or-inline", "give a `price_book` (with `term`) or an inline price, not both"))
    if book and not given(fields, "term"):
        out.append(Broken("book-term", "a `price_book` needs a `term` (a line of that book)"))
    if local and not given(fields, "currency"):
        out.append(Broken("price-currency", "`price_per_gpu_hour` needs a `currency`"))
    if fields.get("kind") == "purchase":
        if usd or local:
            out.append(Broken("purchase-price", "a purchase is priced by `capex_per_gpu` (and `life_years`), not by "
                              "a price per GPU-hour; use `kind: rental` for a price per GPU-hour"))
        if _named(fields, RENTAL_TERMS):
            out.append(Broken("purchase-terms", f"{_named(fields, RENTAL_TERMS)}: rental terms on a `kind: purchase` bid"))
        if not book and not (given(fields, "capex_per_gpu") and given(fields, "life_years")):
            out.append(Broken("purchase-priced", "a purchase needs a `price_book` and `term`, or inline "
                              "`capex_per_gpu` and `life_years`"))
    else:
        if _named(fields, PURCHASE_TERMS):
            out.append(Broken("rental-terms", f"{_named(fields, PURCHASE_TERMS)}: purchase terms on a `kind: rental` bid"))
        if not (usd or local or book):
            out.append(Broken("rental-priced", "give a `price_book` and `term`, or an inline `usd_per_gpu_hour`"))
    return out


def bid_start_rules(fields: Fields) -> list[Broken]:
    if given(fields, "lead_time_days") and given(fields, "available_from"):
        return [Broken("one-start", "give `lead_time_days` or `available_from` (a date), not both")]
    return []


def _day(value: object) -> date | None:
    from datetime import datetime

    return value if isinstance(value, date) and not isinstance(value, datetime) else None


def deadline_rules(as_of: object, deadline: object) -> list[Broken]:
    start, end = _day(as_of), _day(deadline)
    if start is not None and end is not None and end <= start:
        return [Broken("deadline-after-as-of", f"workload.deadline {end} is not after as_of {start}")]
    return []


def available_rules(as_of: object, bid_id: object, available_from: object) -> list[Broken]:
    start, ready = _day(as_of), _day(available_from)
    if start is not None and ready is not None and ready < start:
        return [Broken("available-after-as-of", f"bid {bid_id!r}: available_from {ready} is before as_of {start}")]
    return []


def duplicate_ids(ids: list[object]) -> list[tuple[int, int, Broken]]:
    """(index, index of its first use, the rule) for every bid id used again."""
    first: dict[str, int] = {}
    out = []
    for i, bid_id in enumerate(ids):
        if not isinstance(bid_id, str):
            continue
        if bid_id in first:
            out.append((i, first[bid_id], Broken("unique-ids", f"bid id {bid_id!r} appears twice; ids must be unique")))
        else:
            first[bid_id] = i
    return out
