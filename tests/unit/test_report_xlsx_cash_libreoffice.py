"""The Cash flow sheet recalculated by LibreOffice (headless): its present value, nominal total,
upfront and peak cash equal the document's after recalculation, and an edited input (the cost of
capital both ways, the resale haircut, an FX rate) moves them, the Summary's totals and both
ranks exactly as a fresh quote on the correspondingly edited inputs does (to 0.01%). Skipped with
a reason where soffice is not installed.
"""

from __future__ import annotations

import io
from decimal import Decimal
from pathlib import Path

import openpyxl
import pytest

from procure import api
from procure.document import validate_quote
from procure.report.xlsx_report import render_xlsx
from test_report_xlsx_libreoffice import (CASES, SOFFICE, _books_with, _case_copy, _edit_fx, _line, fresh_quote, libreoffice,
                                          summary, with_inputs)

REL_TOL = Decimal("1e-4")           # 0.01 %
pytestmark = [pytest.mark.slow, pytest.mark.skipif(SOFFICE is None, reason="LibreOffice (soffice) is not installed")]
CASH_CASES = ("example", "eur-and-missing", "own-deal-twd", "time-to-target")
TABLE = {"Nominal total": "nominal_total", "Present value": "present_value", "Upfront cash": "upfront_cash",
         "Peak cash out": "peak_cash_out"}


def _assumption(tmp: Path, case: str, key: str, value: str) -> Path:
    cluster = _case_copy(tmp / f"{key}-{value}", case)
    text = cluster.read_text(encoding="utf-8")
    line = f"  {key}: {value}\n"
    text = text.replace("assumptions:\n", "assumptions:\n" + line) if "assumptions:\n" in text else \
        text.replace("\nbids:\n", f"\nassumptions:\n{line}bids:\n")
    cluster.write_text(text, encoding="utf-8")
    return cluster


OWN_H200 = """  - id: own-h200
    vendor: Own cluster
    accelerator: h200-sxm-141gb
    gpus: 256
    network: roce-400g
    lead_time_days: 30
    pricing: {kind: purchase, capex_per_gpu: 32000, currency: USD, life_years: 5, colo_per_kw_month: 150}
"""


def _power_fx(tmp: Path):
    """A EUR report, a workload power price in USD and a purchase that states none: the workbook keeps
    the USD price and converts it with the FX cell, so editing the EUR rate moves the power line too."""
    cluster = _case_copy(tmp / "power-fx", "eur-and-missing")
    text = cluster.read_text(encoding="utf-8").replace("\nbids:\n", "\nassumptions:\n  power_usd_per_kwh: 0.10\nbids:\n")
    cluster.write_text(text + OWN_H200, encoding="utf-8")
    original = fresh_quote(cluster, basis="commitment")   # its power line is a cost line there

    def edit(fx: dict) -> None:
        next(t for t in fx["tables"] if str(t["as_of"]) == "2026-06-30")["rates"]["EUR"] = "0.95"
    return original, {"fx_EUR": 0.95}, fresh_quote(cluster, _books_with(tmp / "power-fx-books", "fx.yaml", edit), "commitment")


TAX = "{rate: 0.25, vat_rate: 0.1, vat_recovered_after_months: 2, import_duty_rate: 0.02}"


def _taxed(tmp: Path, rate: str) -> dict:
    cluster = _case_copy(tmp / f"tax-{rate}", "example")
    text = cluster.read_text(encoding="utf-8")
    assert "\n  cost_basis:" in text
    cluster.write_text(text.replace("\n  cost_basis:", f"\n  tax: {TAX.replace('0.25', rate)}\n  cost_basis:", 1),
                       encoding="utf-8")
    return fresh_quote(cluster)


def _target_price(tmp: Path):
    """Every AWS H100 bid of the time-to-target case at 3.00 per GPU-hour (the book's line edited)."""
    books = _books_with(tmp / "target-price", "aws-2026q3.yaml",
                        lambda b: _line(b, "h100-sxm5-80gb", "on-demand").update(price_per_gpu_hour="3.00"))
    values: dict[str, object] = {f"bid_{bid}_price_per_gpu_hour": 3.0 for bid in (
        "h100_100k", "h100_4m_commit", "h100_32k_commit", "h100_far_commit")}
    # on the commitment basis, whose cost at the target tokens the workbook rebuilds (on present
    # value it is the JSON's figure: no dated cash at the target tokens in the workbook)
    values["in_cost_basis"] = "commitment"
    return "time-to-target", values, fresh_quote(CASES / "time-to-target" / "cluster.yaml", books, "commitment")


EDITS = {
    "coc-up": lambda tmp: ("example", {"in_cost_of_capital": 0.14},
                           fresh_quote(_assumption(tmp, "example", "cost_of_capital", "0.14"))),
    "coc-down": lambda tmp: ("example", {"in_cost_of_capital": 0.02},
                             fresh_quote(_assumption(tmp, "example", "cost_of_capital", "0.02"))),
    "haircut": lambda tmp: ("example", {"in_resale_haircut": 0.45},
                            fresh_quote(_assumption(tmp, "example", "resale_haircut", "0.45"))),
    "fx": _edit_fx,
    "target-price": _target_price,
}


@pytest.fixture(scope="module")
def recalculated(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("xlsx-cash-lo")
    originals = {case: api.quote_document(CASES / case / "cluster.yaml").to_data() for case in CASH_CASES}
    power_doc, power_values, power_fresh = _power_fx(tmp)
    originals["power-fx"] = power_doc
    originals["tax"] = _taxed(tmp, "0.25")
    files = {f"original-{case}": render_xlsx(validate_quote(doc, case)) for case, doc in originals.items()}
    edits = {"power-fx": ("power-fx", power_values, power_fresh),
             "tax-rate": ("tax", {"in_tax_rate": 0.35}, _taxed(tmp, "0.35"))}
    for name, make in EDITS.items():
        edits[name] = make(tmp)
    for name, (case, values, _) in edits.items():
        files[f"edit-{name}"] = with_inputs(files[f"original-{case}"], values)
    src, out = tmp / "src", tmp / "out"
    src.mkdir()
    for name, data in files.items():
        (src / f"{name}.xlsx").write_bytes(data)
    libreoffice(sorted(src.iterdir()), out, tmp)
    return {"originals": originals, "edits": edits, "out": out}


def cash_table(path: Path) -> dict[str, dict[str, object]]:
    ws = openpyxl.load_workbook(path, data_only=True)["Cash flow"]
    head = [c.value for c in ws[1]]
    rows = {}
    for r in range(2, ws.max_row + 1):
        bid = ws.cell(r, 1).value
        if not bid:
            break
        rows[bid] = {h: ws.cell(r, i + 1).value for i, h in enumerate(head)}
    return rows


def rel_diff(got: object, want: object) -> Decimal:
    g, w = Decimal(str(got)), Decimal(str(want))
    return abs(g - w) / max(abs(w), Decimal("0.01"))


def pv_ranks(doc: dict) -> dict[str, int]:
    costed = sorted((b["cash"]["present_value"], b["id"]) for b in doc["bids"] if b.get("cash"))
    return {bid: 1 + sum(1 for pv, _ in costed if pv < value) for value, bid in costed}


@pytest.mark.parametrize("case", CASH_CASES + ("power-fx", "tax"))
def test_the_cash_sheet_equals_the_document_after_libreoffice(recalculated, case):
    doc = recalculated["originals"][case]
    table = cash_table(recalculated["out"] / f"original-{case}.xlsx")
    cash_bids = [b for b in doc["bids"] if b.get("cash")]
    assert cash_bids and set(table) == {b["id"] for b in cash_bids}
    for bid in cash_bids:
        for column, key in TABLE.items():
            assert rel_diff(table[bid["id"]][column], bid["cash"][key]) <= REL_TOL, (case, bid["id"], column)
        assert table[bid["id"]]["Rank on present value"] == pv_ranks(doc)[bid["id"]]


@pytest.mark.parametrize("edit", sorted(EDITS) + ["power-fx", "tax-rate"])
def test_an_edited_input_moves_cash_totals_and_ranks_like_a_fresh_quote(recalculated, edit):
    case, _, fresh = recalculated["edits"][edit]
    before = {b["id"]: b for b in recalculated["originals"][case]["bids"]}
    out = recalculated["out"] / f"edit-{edit}.xlsx"
    table, rows = cash_table(out), summary(out)
    moved = 0
    for bid in fresh["bids"]:
        if bid.get("cash"):
            for column, key in TABLE.items():
                assert rel_diff(table[bid["id"]][column], bid["cash"][key]) <= REL_TOL, (edit, bid["id"], column)
            assert table[bid["id"]]["Rank on present value"] == pv_ranks(fresh)[bid["id"]], (edit, bid["id"])
            moved += bid["cash"]["present_value"] != before[bid["id"]]["cash"]["present_value"]
        assert rows[bid["id"]]["Rank"] == bid["rank"], (edit, bid["id"])
        if bid["total_cost"] is not None:
            assert rel_diff(rows[bid["id"]]["Total cost"], bid["total_cost"]) <= REL_TOL, (edit, bid["id"])
    assert moved, edit                  # the edit moved some present value: the test can fail


def test_an_edited_price_moves_the_cost_at_target_tokens_without_a_phantom_penalty(recalculated):
    """Cost to target, cost at the target tokens and the penalty follow a price edit like a fresh quote:
    a bid at the workload's batch keeps a zero penalty, the one at a batch of its own its true penalty."""
    _, _, fresh = recalculated["edits"]["target-price"]
    ws = openpyxl.load_workbook(recalculated["out"] / "edit-target-price.xlsx", data_only=True)["Time to target"]
    head = [c.value for c in ws[1]]
    rows = {ws.cell(r, 1).value: {h: ws.cell(r, i + 1).value for i, h in enumerate(head)}
            for r in range(2, ws.max_row + 1) if ws.cell(r, 1).value}
    penalties = 0
    for bid in fresh["bids"]:
        ttt = bid["time_to_target"]
        row = rows[bid["id"]]
        for column, key in (("Cost to target", "cost"), ("Cost at target tokens", "cost_at_target_tokens"),
                            ("Penalty cost", "penalty_cost")):
            assert abs(Decimal(str(row[column])) - ttt[key]) <= Decimal("0.01"), (bid["id"], column)
        penalties += ttt["penalty_cost"] != 0
    assert penalties == 1


def test_the_workload_power_price_follows_the_fx_cell(recalculated):
    """The USD power price is an input in USD; the purchase's power line moves with the EUR rate exactly."""
    _, _, fresh = recalculated["edits"]["power-fx"]
    own = next(b for b in fresh["bids"] if b["id"] == "own-h200")
    power = next(line for line in own["cost_lines"] if line["key"] == "power")
    before = next(b for b in recalculated["originals"]["power-fx"]["bids"] if b["id"] == "own-h200")
    assert power["rate"] != next(line for line in before["cost_lines"] if line["key"] == "power")["rate"]
    ws = openpyxl.load_workbook(recalculated["out"] / "edit-power-fx.xlsx", data_only=True)["Cost lines"]
    rows = [r for r in range(2, ws.max_row + 1) if ws.cell(r, 1).value == "own-h200" and ws.cell(r, 3).value == "Power"
            and str(ws.cell(r, 2).value).startswith("Base")]
    assert rows
    for r in rows:
        assert rel_diff(ws.cell(r, 6).value, power["rate"]) <= Decimal("1e-9")


def test_the_workbook_opens_with_its_own_cached_values(recalculated):
    """Without recalculation (openpyxl reads the cached values) the sheet already shows the document's figures."""
    doc = recalculated["originals"]["example"]
    wb = openpyxl.load_workbook(io.BytesIO(render_xlsx(validate_quote(doc, "example"))), data_only=True)
    ws = wb["Cash flow"]
    pv = {ws.cell(r, 1).value: ws.cell(r, 3).value for r in range(2, 2 + len(doc["bids"]))}
    for bid in doc["bids"]:
        assert Decimal(str(pv[bid["id"]])) == bid["cash"]["present_value"]
