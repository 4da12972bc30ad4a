"""Constraints, best points and the suggested ask, on hand-made rows."""

from __future__ import annotations

from decimal import Decimal

from procure.sweep.analyse import ask_options, ask_text, best_by, failures, mark, workload_findings
from procure.sweep.schema import AskSpec, Constraints


def row(index, accel, gpus, term, days, cost, *, flags=(), power=1.0, workload="w", cash=None):
    """A point; its peak cash out is ``cash``, else its total cost."""
    peak = cash if cash is not None else cost
    return {"peak_cash_out": None if peak is None else Decimal(peak), "index": index, "id": f"p{index + 1:04d}", "workload": workload, "accelerator": accel, "gpus": gpus,
            "term": term, "feasible": "infeasible" not in flags, "time_to_train_days": days,
            "total_cost": None if cost is None else Decimal(cost),
            "cost_per_million_tokens": None if cost is None else Decimal(cost) / 1000,
            "flags": list(flags), "it_power_mw": power}


ROWS = [
    row(0, "h100", 1024, "od", 80.0, "900"),
    row(1, "h100", 2048, "od", 40.0, "940"),
    row(2, "h100", 4096, "od", 21.0, "1200"),
    row(3, "b200", 1024, "1y", 50.0, "700"),
    row(4, "b200", 2048, "1y", 26.0, "720"),
    row(5, "b200", 4096, "1y", 14.0, "1000", power=5.0),
    row(6, "b200", 4096, "od", 14.0, None, flags=("price-missing",)),
    row(7, "mi300x", 512, "od", None, None, flags=("infeasible",)),
    row(8, "h100", 512, "od", 150.0, "880", flags=("misses-deadline",)),
]


def test_the_budget_limits_cash_out_not_net_cost():
    # a purchase that nets 900 after resale but needs 50,000 of cash up front is over a 40,000
    # budget by 10,000; the net-cost limit is a separate constraint
    bought = row(10, "gb200", 1152, "purchase", 30.0, "900", cash="50000")
    c = Constraints(budget=Decimal("40000"))
    assert failures(bought, c) == ["over-budget"]
    marked = mark([bought], c)[0]
    assert not marked["meets_constraints"] and marked["over_budget_by"] == Decimal("10000")
    assert failures(bought, Constraints(budget=Decimal("50000"))) == []
    assert failures(bought, Constraints(max_net_cost=Decimal("800"))) == ["over-net-cost"]
    assert mark([bought], Constraints(max_net_cost=Decimal("800")))[0]["over_net_cost_by"] == Decimal("100")
    assert ask_options(mark([bought], c), AskSpec()) == []


def test_failures_follow_every_constraint_in_order():
    c = Constraints(budget=Decimal("1000"), max_gpus=2048, max_power_mw=4.0)
    assert failures(ROWS[5], c) == ["too-many-gpus", "over-power"]
    assert failures(ROWS[2], c) == ["over-budget", "too-many-gpus"]
    assert failures(ROWS[6], c) == ["price-missing", "too-many-gpus"]
    assert failures(ROWS[8], c) == ["misses-deadline"]
    assert failures(row(9, "tpu", 64, "od", 9.0, "10", power=None), c) == ["power-unknown"]
    assert failures(ROWS[4], c) == []


def test_mark_sets_the_frontier_over_costed_points_whatever_the_constraints():
    marked = mark(ROWS, Constraints(budget=Decimal("800")))
    front = {r["id"] for r in marked if r["on_frontier"]}
    assert front == {"p0004", "p0005", "p0006"}      # p0009 is slower and dearer than p0004
    assert [r["meets_constraints"] for r in marked] == [False, False, False, True, True, False, False, False, False]


def test_best_is_the_cheapest_point_meeting_every_constraint():
    marked = mark(ROWS, Constraints(max_gpus=2048))
    assert best_by(marked, "accelerator", ["h100", "b200", "mi300x"]) == [
        {"key": "h100", "point": "p0001"}, {"key": "b200", "point": "p0004"}, {"key": "mi300x", "point": None}]
    assert best_by(marked, "term", ["od", "1y"]) == [{"key": "od", "point": "p0001"},
                                                     {"key": "1y", "point": "p0004"}]


def test_the_ask_names_ranges_within_the_tolerance_one_option_per_accelerator():
    marked = mark(ROWS, Constraints())
    options = ask_options(marked, AskSpec(options=2, within=0.05))
    assert [(o.accelerator, o.term, o.gpus_min, o.gpus_max, o.point) for o in options] == [
        ("b200", "1y", 1024, 2048, "p0004"), ("h100", "od", 1024, 2048, "p0001")]
    text = ask_text(options, {"b200": "B200", "h100": "H100"}, "USD", 0.05, marked)
    assert text.startswith("Ask for 1,024–2,048 B200 on 1y (best 1,024 GPUs: 700 USD")
    assert "; or 1,024–2,048 H100 on od" in text and "within 5%" in text


def test_without_any_point_meeting_the_constraints_the_ask_says_so_and_why():
    marked = mark(ROWS, Constraints(budget=Decimal("1")))
    assert ask_options(marked, AskSpec()) == []
    text = ask_text([], {"b200": "B200"}, "USD", 0.05, marked)
    assert text.startswith("No point meets every constraint. The fastest costed point, p0006 (4,096 B200 on 1y)")
    assert "over the cash budget by 999 USD" in text   # peak cash 1,000 against a budget of 1


def test_findings_count_and_order_the_frontier_fastest_first():
    marked = mark(ROWS, Constraints())
    found = workload_findings(marked, "w", ["h100", "b200"], ["od", "1y"], AskSpec(), {}, "USD")
    assert found["frontier"] == ["p0006", "p0005", "p0004"]
    assert (found["points"], found["feasible"], found["costed"], found["meeting_constraints"]) == (9, 8, 7, 6)
