"""A fresh quote of a case folder with one input moved the way a user moves it, to check what a
sensitivity row states against.

Assumptions are moved in a copy of cluster.yaml (its ``assumptions`` block, and a bid's own
figure for the same term where its price book or inline terms give one: that one wins over the
assumption, so a reader moving "the cost of capital" moves both). A bid's price and lead time
are moved in the loaded inputs (a price-book bid cannot be given an inline price), an exchange
rate in the FX table the loader reads, and a bid's model efficiency where the pipeline hands the
step time to the economics. Then the whole quote is built again (``pipeline.build_document``).
"""

from __future__ import annotations

import shutil
from contextlib import contextmanager
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterator

import yaml

from procure import pipeline
from procure.economics.sensitivity import _efficiency
from procure.inputs import bundle
from procure.inputs.bundle import Inputs, load_inputs
from procure.money import convert

CAPEX_KEYS = ("capex_per_gpu", "capex_per_node", "network_capex_per_gpu", "network_capex")
ASSUMPTION_KEYS = {"failure_rate": "failures_per_gpu_hour", "power_price": "power_usd_per_kwh",
                   "cost_of_capital": "cost_of_capital", "resale_decline": "resale_decline_per_year",
                   "resale_haircut": "resale_haircut", "leftover_reuse": "leftover_hours_reuse_share"}
OWN_KEYS = {"power_price": "power_per_kwh", "cost_of_capital": "cost_of_capital",
            "resale_decline": "resale_decline_per_year"}


def _number(value: Decimal | float) -> float:
    """A YAML number that reads back as the same decimal."""
    return float(str(value))


def _copy(folder: Path, tmp: Path) -> Path:
    target = tmp / folder.name
    if not target.exists():
        shutil.copytree(folder, target)
    return target / "cluster.yaml"


def _moved_assumptions(folder: Path, tmp: Path, row: dict[str, Any]) -> Path:
    """cluster.yaml with the row's assumption moved (and each bid's own figure for it)."""
    path = _copy(folder, tmp)
    doc = yaml.safe_load((folder / "cluster.yaml").read_text(encoding="utf-8"))
    loaded = load_inputs(folder / "cluster.yaml")
    base = pipeline.economics_assumptions(loaded)
    factor, key = row["factor"], ASSUMPTION_KEYS[row["factor"]]
    scale = Decimal(1) + Decimal(repr(row["change"]))
    given = doc.setdefault("assumptions", {}) or {}
    doc["assumptions"] = given
    if factor == "leftover_reuse":
        given[key] = row["step"]
    elif factor == "power_price":
        if key in given:
            given[key] = _number(Decimal(str(given[key])) * scale)
    else:
        given[key] = _number(Decimal(str(getattr(base, key))) * scale)
    own = OWN_KEYS.get(factor)
    for spec, rb in zip(doc["bids"], loaded.bids):
        quoted = rb.price.quote(own) if own else None
        plain = rb.price.plain.get(own) if own else None
        if quoted is not None:
            spec["pricing"][own] = _number(quoted.quoted * scale)
            spec["pricing"].setdefault("currency", quoted.currency)
        elif plain is not None:
            spec["pricing"][own] = _number(Decimal(str(plain)) * scale)
    path.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def _moved_bid(inputs: Inputs, bid_id: str, row: dict[str, Any]) -> Inputs:
    """The loaded inputs with one bid's price or lead time moved."""
    bids = list(inputs.bids)
    i = next(j for j, rb in enumerate(bids) if rb.bid.id == bid_id)
    rb = bids[i]
    if row["factor"] in ("lead_time", "lead_time_slip"):
        lead = rb.lead_time_days or 0.0
        lead = lead * (1.0 + row["change"]) if row["factor"] == "lead_time" else lead + row["step"]
        bids[i] = replace(rb, lead_time_days=lead)
    else:
        keys = ("price_per_gpu_hour",) if rb.price.kind == "rental" else CAPEX_KEYS
        scale = Decimal(1) + Decimal(repr(row["change"]))
        quoted = tuple(replace(q, quoted=q.quoted * scale, converted=convert(q.quoted * scale, q.fx_rate))
                       if q.key in keys else q for q in rb.price.quoted)
        bids[i] = replace(rb, price=replace(rb.price, quoted=quoted))
    return replace(inputs, bids=bids)


@contextmanager
def _fx_moved(currency: str, change: float) -> Iterator[None]:
    """The FX table the loader reads with ``currency`` worth ``1 + change`` times as much."""
    original = bundle.default_catalog

    def moved() -> Any:
        cat = original()
        scale = Decimal(1) + Decimal(repr(change))
        tables = tuple(replace(t, rates={k: (v / scale if k == currency else v) for k, v in t.rates.items()})
                       for t in cat.fx_tables)
        return replace(cat, fx_tables=tables)
    bundle.default_catalog = moved
    try:
        yield
    finally:
        bundle.default_catalog = original


@contextmanager
def _efficiency_moved(bid_id: str, change: float) -> Iterator[None]:
    original = pipeline.bid_case

    def moved(*args: Any, **kwargs: Any) -> Any:
        case = original(*args, **kwargs)
        return _efficiency(case, change) if case.id == bid_id else case
    pipeline.bid_case = moved        # type: ignore[assignment]
    try:
        yield
    finally:
        pipeline.bid_case = original   # type: ignore[assignment]


def fresh_document(folder: Path, tmp: Path, row: dict[str, Any], bid_id: str,
                   basis: str | None = None) -> dict[str, Any]:
    """The quote document of ``folder`` with the input of ``row`` (a sensitivity row of bid
    ``bid_id``) moved, built from scratch."""
    factor = row["factor"]
    path = folder / "cluster.yaml"
    if factor in ASSUMPTION_KEYS:
        path = _moved_assumptions(folder, tmp, row)
    if factor == "fx":
        with _fx_moved(row["subject"], row["change"]):
            inputs = load_inputs(path)
    else:
        inputs = load_inputs(path)
    if factor in ("price", "lead_time", "lead_time_slip"):
        inputs = _moved_bid(inputs, bid_id, row)
    if factor == "cost_basis":
        basis = row["setting"]
    if factor == "efficiency":
        with _efficiency_moved(bid_id, row["change"]):
            return pipeline.build_document(inputs, basis=basis).model_dump(mode="json")
    return pipeline.build_document(inputs, basis=basis).model_dump(mode="json")


def base_document(folder: Path, basis: str | None = None) -> dict[str, Any]:
    return pipeline.build_document(load_inputs(folder / "cluster.yaml"), basis=basis).model_dump(mode="json")


__all__ = ["base_document", "fresh_document", "statements"]


def _trial_key(row: dict[str, Any], bid_id: str) -> tuple[Any, ...]:
    return (row["factor"], row["change"], row.get("step"), row.get("subject"), row.get("setting"),
            bid_id if row.get("scope", "bid") == "bid" else None)


def statements(folder: Path, tmp: Path, changes: tuple[float, ...] = (-0.2, 0.2),
               only: str | None = None, basis: str | None = None) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(bid id, sensitivity row, fresh document at the row's stated value) for every row of
    every bid (or of bid ``only``) at ``changes`` (steps and settings always), one fresh quote
    per distinct trial."""
    base = base_document(folder, basis)
    fresh: dict[tuple[Any, ...], dict[str, Any]] = {}
    found = []
    for bid in base["bids"]:
        if only is not None and bid["id"] != only:
            continue
        for row in bid["sensitivity"]:
            if row.get("step") is None and row.get("setting") is None and row["change"] not in changes:
                continue
            key = _trial_key(row, bid["id"])
            if key not in fresh:
                fresh[key] = fresh_document(folder, tmp, row, bid["id"], base["cost_basis"])
            found.append((bid["id"], row, fresh[key]))
    return found
