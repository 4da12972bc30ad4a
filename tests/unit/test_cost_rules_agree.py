"""The cost rules agree in their three forms: the Decimal lines the report prints, the float total
the Monte Carlo band draws, and the workbook's line formulas (evaluated by the workbook's own
evaluator, over Model cells holding the economics' terms) — for random but valid pricing terms.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procure.economics.cost import (CostLine, Terms, billed_hours, capex_total, cost_lines, line_plan,
                                    market_value_new, resale_fraction, terms)
from procure.document import QuoteDocument
from procure.document.bid import BidResult, PricingRef
from procure.document.bid import CostLine as DocLine
from procure.economics.cost_float import total_cost_float
from procure.economics.cost_rules import RULES, TERMS, float_plan, rule, rule_carried
from procure.economics.inputs import Assumptions, Pricing
from procure.report.xlsx_cells import Book
from procure.report.xlsx_chain import Chain
from procure.report.xlsx_formula import Expr, Name
from procure.report.xlsx_inputs import Names
from procure.report.xlsx_lines import LINES_SHEET, A, Q, R, build_lines

BID = "bid"
TERMS_SHEET = "Terms"


def money(max_value: str, places: int = 2) -> st.SearchStrategy[Decimal]:
    return st.decimals(min_value=Decimal(0), max_value=Decimal(max_value), places=places,
                       allow_nan=False, allow_infinity=False)


def some(strategy: st.SearchStrategy[Decimal]) -> st.SearchStrategy[Decimal | None]:
    return st.one_of(st.none(), strategy)


rentals = st.builds(
    lambda price, months, share, storage, network, support, discount, setup, egress_tb, egress, prepay: Pricing(
        kind="rental", currency="USD", price_per_gpu_hour=price, min_commit_months=months, committed_share=share,
        storage_per_gpu_hour=storage, network_per_gpu_hour=network, support_fraction=support,
        discount_fraction=discount, setup_fee=setup, egress_tb=egress_tb, egress_per_tb=egress,
        prepay_fraction=prepay, tdp_w=700.0),
    money("20", 4), st.integers(0, 24), st.sampled_from([Decimal(1), Decimal("0.8")]),
    st.one_of(st.just(Decimal(0)), money("1", 4)), st.one_of(st.just(Decimal(0)), money("1", 4)),
    st.one_of(st.just(Decimal(0)), money("0.3", 3)), st.one_of(st.just(Decimal(0)), money("0.5", 2)),
    money("100000"), money("500", 1), money("120"), st.one_of(st.just(Decimal(0)), money("1", 2)))

purchases = st.builds(
    lambda capex, node, per_node, net, fabric, life, residual, support, power, pue, colo, kw, staff, coc, market: Pricing(
        kind="purchase", currency="USD", price_per_gpu_hour=None, capex_per_gpu=capex, capex_per_node=node,
        gpus_per_node=per_node, network_capex_per_gpu=net, network_capex=fabric, life_years=life,
        residual_fraction=residual, support_per_gpu_year=support, power_per_kwh=power, pue=pue,
        colo_per_kw_month=colo, kw_per_gpu=kw, power_source="given", staff_per_year=staff, cost_of_capital=coc,
        market_capex_per_gpu=market),
    money("80000"), some(money("60000")), st.sampled_from([4, 8]), some(money("10000")), some(money("5000000")),
    st.sampled_from([Decimal(3), Decimal(4), Decimal("5.5")]), some(money("0.5")), some(money("5000")),
    some(money("0.4", 4)), some(st.sampled_from([Decimal("1.1"), Decimal("1.35")])), some(money("400")),
    some(st.sampled_from([Decimal("0.7"), Decimal("1.356"), Decimal("1.914")])), some(money("3000000")),
    some(money("0.2", 3)), some(money("90000")))

hours = st.decimals(min_value=Decimal("0.01"), max_value=Decimal(100_000), places=2)
bases = st.sampled_from(("run", "commitment"))


def model_cells(t: Terms, used: Decimal, basis: str) -> dict[str, Decimal]:
    """What the workbook's Model cells hold for this bid: each economic term, as the economics has it."""
    p, power = t.pricing, t.power
    billed = billed_hours(t, used, basis)
    cells: dict[str, Decimal | None] = {
        "used_hours": used, "billed_hours": billed, "idle_hours": billed - used,
        "price_per_gpu_hour": p.price_per_gpu_hour, "discount_factor": t.price_factor,
        "storage_per_gpu_hour": p.storage_per_gpu_hour, "network_per_gpu_hour": p.network_per_gpu_hour,
        "setup_fee": p.setup_fee, "egress_per_tb": p.egress_per_tb, "cost_of_capital": t.cost_of_capital,
        "kw_per_gpu": power.kw_per_gpu, "pue": power.pue, "power_per_kwh": power.price_per_kwh,
        "colo_per_kw_month": p.colo_per_kw_month, "support_per_gpu_year": p.support_per_gpu_year,
        "staff_per_year": p.staff_per_year}
    if p.kind == "purchase":
        cells |= {"capex_per_gpu": p.capex_per_gpu, "nodes": Decimal(t.nodes), "capex_per_node": p.capex_per_node,
                  "network_capex_per_gpu": p.network_capex_per_gpu, "network_capex": p.network_capex,
                  "capex_total": capex_total(t), "market_value": market_value_new(t), "life_hours": t.life_hours,
                  "depreciated_hours": min(used, t.life_hours), "depreciable_fraction": t.depreciable_fraction,
                  "resale_fraction": resale_fraction(t, used)}
    return {key: value for key, value in cells.items() if value is not None}


def workbook_lines(t: Terms, used: Decimal, basis: str, lines: list[CostLine]) -> tuple[Book, list[int], bool]:
    """The Cost lines sheet written for these lines over Model cells holding the terms: its book,
    each line's row, and whether every line was rebuilt by formula (none taken as given)."""
    book, names = Book(), Names()
    values = book.sheet(TERMS_SHEET)
    base: dict[str, Expr] = {}
    inputs = {"gpus": Decimal(t.gpus), "support_fraction": t.pricing.support_fraction,
              "prepay_fraction": t.pricing.prepay_fraction, "egress_tb": t.pricing.egress_tb}
    named = [(names.base(BID, key), value) for key, value in model_cells(t, used, basis).items()]
    named += [(names.bid(BID, key), value) for key, value in inputs.items()]
    named += [(Names.global_("gpu_utilisation_power"), t.power.utilisation),
              (Names.global_("months_hours"), t.months_hours)]
    for row, (name, value) in enumerate(named):
        values.put(row, 0, value)
        book.define(name, TERMS_SHEET, row, 0)
    base = {key: Name(names.base(BID, key)) for key in model_cells(t, used, basis)}
    # the few document fields the Cost lines sheet reads (the rest of a bid is irrelevant here)
    bid = BidResult.model_construct(id=BID, pricing=PricingRef.model_construct(kind=t.pricing.kind), cost_bases={},
                                    residual_value=None,
                                    cost_lines=[DocLine.model_validate(line, from_attributes=True) for line in lines])
    chain = Chain(bid, base, {}, {})
    doc = QuoteDocument.model_construct(currency="USD", bids=[bid])
    blocks, _ = build_lines(book, doc, [chain], names, set(book.names))
    block = blocks[(BID, "", "base")]
    return book, [row for _, row, _ in block.rows], all(rebuilt for _, _, rebuilt in block.rows)


def float_tolerance(t: Terms, lines: list[CostLine], basis: str) -> float:
    """Each Decimal line is rounded to the cent, the float never; the resale fraction is kept to 1e-6."""
    resale = float(market_value_new(t)) * 5e-7 if basis == "commitment" and t.pricing.kind == "purchase" else 0.0
    return 0.01 * len(lines) + resale


@settings(max_examples=60, deadline=None)
@given(pricing=st.one_of(rentals, purchases), gpus=st.integers(1, 20_000), used=hours, basis=bases)
def test_decimal_float_and_workbook_agree(pricing: Pricing, gpus: int, used: Decimal, basis: str) -> None:
    t = terms(pricing, gpus, Assumptions())
    lines = cost_lines(t, used, basis)
    decimal_total = sum((line.amount for line in lines), Decimal(0))
    float_total = float(total_cost_float(t, float(used), basis=basis))
    assert float_total == pytest.approx(float(decimal_total), rel=1e-9, abs=float_tolerance(t, lines, basis))
    book, rows, rebuilt = workbook_lines(t, used, basis, lines)
    assert rebuilt, "every line has a workbook formula"
    for line, row in zip(lines, rows):
        assert (book.value(LINES_SHEET, row, Q), book.value(LINES_SHEET, row, R)) == (line.quantity, line.rate), line.key
        assert book.value(LINES_SHEET, row, A) == line.amount, line.key


def test_the_check_fails_when_a_workbook_term_is_wrong() -> None:
    """The comparison can fail: a Model cell one hour off moves a line's amount."""
    pricing = Pricing(kind="rental", currency="USD", price_per_gpu_hour=Decimal("2.50"), min_commit_months=1)
    t = terms(pricing, 8, Assumptions())
    lines = cost_lines(t, Decimal(10), "commitment")
    book, rows, _ = workbook_lines(replace(t, gpus=9), Decimal(10), "commitment", lines)
    assert [book.value(LINES_SHEET, row, A) for row in rows] != [line.amount for line in lines]


# --- the rule table itself ----------------------------------------------------------------------

EVERYTHING_RENTED = Pricing(kind="rental", currency="USD", price_per_gpu_hour=Decimal("2.5"), min_commit_months=1,
                            storage_per_gpu_hour=Decimal("0.01"), network_per_gpu_hour=Decimal("0.02"),
                            support_fraction=Decimal("0.1"), discount_fraction=Decimal("0.2"),
                            setup_fee=Decimal(500), egress_tb=Decimal(3), egress_per_tb=Decimal(90),
                            prepay_fraction=Decimal("0.5"))
EVERYTHING_BOUGHT = Pricing(kind="purchase", currency="USD", price_per_gpu_hour=None, capex_per_gpu=Decimal(30000),
                            capex_per_node=Decimal(20000), network_capex_per_gpu=Decimal(2000),
                            network_capex=Decimal(100000), life_years=Decimal(4), support_per_gpu_year=Decimal(900),
                            power_per_kwh=Decimal("0.1"), colo_per_kw_month=Decimal(150), kw_per_gpu=Decimal("1.2"),
                            power_source="given", staff_per_year=Decimal(200000), cost_of_capital=Decimal("0.08"))


def test_every_rule_is_a_line_some_bid_has() -> None:
    """The property above can reach every rule: each is planned for a bid with every term priced."""
    planned = {(r.key, r.variant) for pricing in (EVERYTHING_RENTED, EVERYTHING_BOUGHT)
               for basis in ("run", "commitment") for r in line_plan(terms(pricing, 16, Assumptions()), basis)}
    assert planned == set(RULES)


def test_the_workbook_reads_a_line_by_the_factors_it_carries() -> None:
    assert rule_carried("support", set()) is rule("support")
    assert rule_carried("support", {"used_hours"}) is rule("support", "per_gpu_year")
    assert rule_carried("capex", set()) is rule("capex", "bought")
    assert rule_carried("capex", {"used_hours", "depreciable_fraction"}) is rule("capex", "depreciation")
    assert rule_carried("gpu_hours", {"discount_factor"}) is rule("gpu_hours") is rule_carried("gpu_hours", set())
    assert rule_carried("gpu_hours", {"surcharge"}) is None and rule_carried("rebate", set()) is None


def test_a_discount_is_a_factor_and_words_only_where_there_is_one() -> None:
    t = terms(EVERYTHING_RENTED, 8, Assumptions())
    discounted = cost_lines(t, Decimal(10), "run")[0]
    full = cost_lines(terms(replace(EVERYTHING_RENTED, discount_fraction=Decimal(0)), 8, Assumptions()),
                      Decimal(10), "run")[0]
    assert discounted.factors == {"discount_factor": Decimal("0.8")} and discounted.formula.endswith("× (1 − discount)")
    assert full.factors == {} and "discount" not in full.formula
    assert (discounted.amount, full.amount) == (Decimal("160.00"), Decimal("200.00"))    # 8 × 10 h × 2.50 (× 0.8)


@settings(max_examples=60, deadline=None)
@given(values=st.fixed_dictionaries({name: st.floats(0.01, 1e4) for name in TERMS}))
def test_the_float_reader_multiplies_what_the_tree_says(values: dict[str, float]) -> None:
    """Each rule regrouped for floats (what the Monte Carlo multiplies: plain numbers first, then
    the varying terms and the draws) is the tree's value."""
    for r in RULES.values():
        (group,) = (plan := float_plan([r], frozenset({"used_hours"}), {"price_per_gpu_hour": "egress_tb"})).paid + plan.rest
        tree = r.quantity.evaluate(values.__getitem__, float) * r.rate.evaluate(values.__getitem__, float)
        for factor in r.factors:
            tree *= factor.node.evaluate(values.__getitem__, float)
        if r.divisor is not None:
            tree /= r.divisor.evaluate(values.__getitem__, float)
        if "price_per_gpu_hour" in r.terms:          # a moved term meets its draw
            tree *= values["egress_tb"]
        assert group.value(values) == pytest.approx(tree, rel=1e-12), r.key
