"""Every statement of the sensitivity table agrees with a fresh quote at the stated value.

For the shipped example (on its own basis and on the run basis, where a shorter lead time makes
the purchase meet the deadline), a case with a purchase, a reservation and a TWD quote, and an
EUR report with TWD and USD quotes (a moved rate or price is converted again, to the cent), each
row at ±20 % (and every slip, reuse share and the other basis) is checked against the quote
built again from scratch with that one input moved (tests/unit/fresh_quote.py says how each
input is moved): the recommended bid, whether it changed, the moved bid's cost per million
tokens, days and rank, and the gap between the recommended bid and the runner-up.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from fresh_quote import base_document, statements

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples"
OWN_DEAL = ROOT / "tests" / "cases" / "own-deal-twd"
EUR = ROOT / "tests" / "cases" / "eur-and-missing"


def _gap(doc: dict[str, Any]) -> Decimal | None:
    """The fresh quote's runner-up less its recommended bid, on what ranks."""
    basis, pick = doc["cost_basis"], doc["recommendation"]["bid"]
    by_id = {b["id"]: b for b in doc["bids"]}

    def value(bid_id: str) -> Decimal | None:
        found = by_id[bid_id]["cost_bases"].get(basis)
        return None if not found else Decimal(found["ranking_cost_per_million_tokens"])
    runner = next((i for i in doc["ranking"] if i != pick and by_id[i]["cost_per_million_tokens"] is not None), None)
    if pick is None or runner is None:
        return None
    chosen, other = value(pick), value(runner)
    return None if chosen is None or other is None else other - chosen


def _stated_cost(row: dict[str, Any], bid: dict[str, Any]) -> Any:
    if row.get("setting"):
        return bid["cost_bases"][row["setting"]]["cost_per_million_tokens"]
    return bid["cost_per_million_tokens"]


@pytest.mark.parametrize("folder, basis, factors", [
    (EXAMPLE, None, {"price", "efficiency", "lead_time", "lead_time_slip", "failure_rate", "power_price",
                     "cost_of_capital", "resale_decline", "resale_haircut", "leftover_reuse", "cost_basis"}),
    (EXAMPLE, "run", {"lead_time", "lead_time_slip", "resale_decline", "cost_basis"}),
    (OWN_DEAL, None, {"price", "lead_time", "lead_time_slip", "cost_of_capital", "resale_decline",
                      "resale_haircut", "leftover_reuse", "fx"}),
    (EUR, None, {"price", "lead_time_slip", "leftover_reuse", "fx"}),
], ids=["example", "example-run-basis", "own-deal-twd", "eur-and-missing"])
def test_every_sensitivity_statement_agrees_with_a_fresh_quote(folder, basis, factors, tmp_path):
    base = base_document(folder, basis)
    found = statements(folder, tmp_path, basis=basis)
    assert factors <= {row["factor"] for _, row, _ in found}
    wrong = []
    for bid_id, row, fresh in found:
        bid = next(b for b in fresh["bids"] if b["id"] == bid_id)
        recommended = fresh["recommendation"]["bid"]
        gap = _gap(fresh)
        stated = (row["recommended"], row["winner_changes"], row["cost_per_million_tokens"], row["rank"],
                  row["time_to_train_days"], None if row["gap"] is None else Decimal(row["gap"]))
        actual = (recommended, recommended != base["recommendation"]["bid"], _stated_cost(row, bid),
                  fresh["ranking"].index(bid_id) + 1, bid["time_to_train_days"], gap)
        if stated != actual:
            wrong.append((bid_id, row["factor"], row["change"], row.get("step"), row.get("subject"), stated, actual))
    assert wrong == []


def test_a_shorter_lead_time_that_meets_the_deadline_is_said_to_change_the_recommendation():
    # on the run basis the purchase is cheapest but late (90 + 43.0 days > 120); 72 days of lead
    # time bring it in (115.0 days): the table and the recommendation must say so
    doc = base_document(EXAMPLE, "run")
    assert doc["recommendation"]["bid"] == "coreweave-h100-1y"
    own = next(b for b in doc["bids"] if b["id"] == "own-h100")
    rows = {(r["factor"], r["change"]): r for r in own["sensitivity"]}
    assert rows[("lead_time", -0.2)]["winner_changes"] and rows[("lead_time", -0.2)]["recommended"] == "own-h100"
    assert not rows[("lead_time", -0.1)]["winner_changes"]     # 81 + 43.0 days: still late
    assert "lead time -20% on own-h100" in doc["sensitivity_summary"]["winner_changes_under"]
    assert "lead time -20% on own-h100" in doc["recommendation"]["text"]
