"""The XLSX report: the Summary contract, a live model whose formulas carry their values, inputs
that are named cells with unit, source and as-of, no constants in formulas, text safety,
determinism. LibreOffice recalculation is in test_report_xlsx_libreoffice.py."""

from __future__ import annotations

import io
import re
import zipfile
from decimal import Decimal
from pathlib import Path

import openpyxl
import pytest

from procure import api
from procure.document import QuoteDocument, load_quote, validate_quote
from procure.report.xlsx_formula import Name, Num, Range, Ref, call
from procure.report.xlsx_report import SHEETS, build_book, render_xlsx

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CASES = Path(__file__).resolve().parents[1] / "cases"
CASE_NAMES = sorted(p.name for p in CASES.iterdir() if (p / "cluster.yaml").is_file())

# Numbers a formula may contain: unit conversions, the 1 and 2 of the formulas themselves
# (1 − x, Young's √(2δ/Nλ), τ/2), 0 in comparisons. ROUND/ROUNDUP digits are allowed apart.
UNIT_CONVERSIONS = {
    Decimal(24): "h per day", Decimal(60): "s per min", Decimal(3600): "s per h", Decimal(86400): "s per day",
    Decimal(1000): "W per kW, kWh per MWh", Decimal(10**6): "tokens per million",
    Decimal(10**9): "B per GB", Decimal(10**12): "FLOP/s per TFLOP/s", Decimal(8760): "h per year",
    Decimal(12): "months per year (discounting)",
}
FORMULA_CONSTANTS = {Decimal(0), Decimal(1), Decimal(2)}
ROUNDING_DIGITS = {Decimal(0), Decimal(2), Decimal(3), Decimal(4), Decimal(6)}   # nodes, cents, MWh, rates, prices
TOKEN = re.compile(r'"(?:[^"]|"")*"|\'(?:[^\']|\'\')*\'!|[A-Za-z_$][A-Za-z0-9_.$]*|\d+(?:\.\d+)?(?:[Ee][+-]?\d+)?'
                   r'|\.\d+|<=|>=|<>|[-+*/^(),:=<>&%]')


@pytest.fixture(scope="module")
def documents() -> dict[str, QuoteDocument]:
    return {name: api.quote_document(CASES / name / "cluster.yaml") for name in CASE_NAMES}


@pytest.fixture(scope="module")
def workbooks(documents) -> dict[str, bytes]:
    return {name: render_xlsx(doc) for name, doc in documents.items()}


@pytest.fixture(scope="module")
def sample() -> QuoteDocument:
    return load_quote((FIXTURES / "quote_sample.json").read_bytes(), "sample")


def load(data: bytes, **kwargs) -> openpyxl.Workbook:
    return openpyxl.load_workbook(io.BytesIO(data), **kwargs)


def formulas(data: bytes) -> list[tuple[str, str, str]]:
    wb = load(data)
    return [(ws.title, c.coordinate, str(c.value)) for ws in wb.worksheets for row in ws.iter_rows() for c in row
            if c.data_type == "f"]


def literals(formula: str) -> list[Decimal]:
    """The numeric literals of a formula, leaving out the digits argument of ROUND/ROUNDUP."""
    tokens = TOKEN.findall(formula.lstrip("="))
    out, stack = [], []
    for i, tok in enumerate(tokens):
        if tok == "(":
            stack.append(tokens[i - 1].upper() if i else "")
        elif tok == ")":
            stack.pop()
        elif re.fullmatch(r"\d+(?:\.\d+)?(?:[Ee][+-]?\d+)?|\.\d+", tok):
            digits_arg = (stack and stack[-1] in ("ROUND", "ROUNDUP") and tokens[i - 1] == ","
                          and tokens[i + 1] == ")")
            if not digits_arg:
                out.append(Decimal(tok))
            elif Decimal(tok) not in ROUNDING_DIGITS:
                out.append(Decimal(tok))
    return out


def forbidden_literals(data: bytes) -> list[str]:
    allowed = set(UNIT_CONVERSIONS) | FORMULA_CONSTANTS
    return [f"{sheet}!{ref}: {text}" for sheet, ref, text in formulas(data)
            if any(n not in allowed for n in literals(text))]


def _col(head: list, name: str) -> str:
    return openpyxl.utils.get_column_letter(head.index(name) + 1)


def summary_rows(ws) -> tuple[list[str], dict[str, int]]:
    head = [c.value for c in ws[1]]
    rows = {ws.cell(r, 2).value: r for r in range(2, ws.max_row + 1) if ws.cell(r, 2).value}
    return head, rows


# --- the contract ----------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASE_NAMES)
def test_summary_contract(case, documents, workbooks):
    doc, wb = documents[case], load(workbooks[case])
    assert wb.sheetnames == SHEETS                                      # Negotiation included
    ws = wb["Summary"]
    head, rows = summary_rows(ws)
    per_mtok = f"{doc.currency} per million tokens"
    for column in ("Bid", "Total cost", per_mtok, "Time to train (days)"):
        assert column in head
    assert set(rows) == {b.id for b in doc.bids}
    total, usd, rank = head.index("Total cost") + 1, head.index(per_mtok) + 1, head.index("Rank") + 1
    for bid in doc.bids:
        r = rows[bid.id]
        assert ws.cell(r, rank).data_type == "f"
        if bid.total_cost is None:
            assert ws.cell(r, total).value == "n/a"
        else:                       # the ranking basis' total, each basis summing its cost lines
            assert str(ws.cell(r, total).value) == (
                f'=IF(in_cost_basis="present_value",{_col(head, "Present value: total cost")}{r},'
                f'IF(in_cost_basis="run",{_col(head, "Run basis: total cost")}{r},'
                f'{_col(head, "Commitment basis: total cost")}{r}))')
            # live: the Cash flow sheet's discounted total (which LibreOffice checks against the JSON)
            assert str(ws.cell(r, head.index("Present value: total cost") + 1).value) == \
                f"=cash_{bid.id.replace('-', '_').lower()}_present_value"
            for basis in ("Run", "Commitment"):
                assert str(ws.cell(r, head.index(f"{basis} basis: total cost") + 1).value).startswith(
                    "=SUM('Cost lines'!")
            assert "in_train_tokens" in str(ws.cell(r, usd).value)
    assert all(wb[s].freeze_panes for s in SHEETS if s != "README")


def test_every_formula_is_free_of_constants_but_unit_conversions(workbooks):
    counted = 0
    for case, data in workbooks.items():
        assert forbidden_literals(data) == [], case
        counted += len(formulas(data))
    assert counted > 500


def test_the_literal_check_catches_a_typed_constant():
    assert literals("=0.7*in_pue*0.8") == [Decimal("0.7"), Decimal("0.8")]
    assert literals("=ROUND(E5*F5/730,2)") == [Decimal(730)]
    assert literals("=ROUND(E5*F5,2)") == []
    assert literals("=ROUND(x,7)") == [Decimal(7)]
    assert literals("=bid_h100_2_gpus*'Cost lines'!E12*3600") == [Decimal(3600)]


# --- the workbook reproduces the document ----------------------------------------------------

@pytest.mark.parametrize("case", CASE_NAMES)
def test_the_chain_reproduces_every_figure_of_the_document(case, documents):
    _, result = build_book(documents[case])
    assert result.mismatches == ()
    assert result.given_lines == ()
    costed = [b for b in documents[case].bids if b.total_cost is not None]
    assert result.checked >= 10 * len(costed)


def test_a_document_the_chain_cannot_reproduce_is_said_so(sample):
    """The hand-made sample follows an older economics: the README lists what differs."""
    book, result = build_book(sample)
    assert result.mismatches and result.given_lines
    readme = book.sheets[SHEETS.index("README")]
    text = "\n".join(str(c.content) for c in readme.cells.values())
    assert f"{len(result.mismatches)} differ" in text
    assert "Taken as given" in text


@pytest.mark.parametrize("case", CASE_NAMES)
def test_non_recalculating_readers_see_the_json_numbers(case, documents, workbooks):
    import pandas as pd

    doc, data = documents[case], workbooks[case]
    ws = load(data, data_only=True)["Summary"]
    head, rows = summary_rows(ws)
    frame = pd.read_excel(io.BytesIO(data), sheet_name="Summary")
    per_mtok = f"{doc.currency} per million tokens"
    for bid in doc.bids:
        r = rows[bid.id]
        panda = frame[frame["Bid"] == bid.id].iloc[0]
        assert ws.cell(r, head.index("Rank") + 1).value == bid.rank == panda["Rank"]
        for column, amount in (("Total cost", bid.total_cost), (per_mtok, bid.cost_per_million_tokens),
                               ("Billed hours", bid.billed_hours)):
            got = ws.cell(r, head.index(column) + 1).value
            if amount is None:
                assert got == "n/a" or got is None, (bid.id, column)
                continue
            assert Decimal(str(got)) == amount, (bid.id, column, got, amount)
            assert Decimal(str(panda[column])) == amount
        for column, want in (("Time to train (days)", bid.time_to_train_days), ("Step time (s)", bid.step_time_s),
                             ("MFU", bid.mfu)):
            got = ws.cell(r, head.index(column) + 1).value
            if want is None:
                continue
            assert abs(got - want) <= 2e-5 * abs(want), (bid.id, column)
            assert abs(panda[column] - want) <= 2e-5 * abs(want)


@pytest.mark.parametrize("case", CASE_NAMES)
def test_cost_lines_carry_the_json_amounts(case, documents, workbooks):
    doc, data = documents[case], workbooks[case]
    ws = load(data, data_only=True)["Cost lines"]
    head = [c.value for c in ws[1]]
    for basis in ("run", "commitment"):
        got = [(ws.cell(r, 1).value, ws.cell(r, 3).value, ws.cell(r, head.index("Amount") + 1).value)
               for r in range(2, ws.max_row + 1) if ws.cell(r, 2).value == f"Base, {basis} basis"]
        want = [(b.id, line.label, line.amount) for b in doc.bids
                for costs in [b.cost_bases.get(basis)] if costs is not None for line in costs.cost_lines]
        assert sorted((i, label, Decimal(str(a))) for i, label, a in got) == sorted(want)
        assert want or case == "moe-and-infeasible" or basis == "run"


def test_every_formula_is_stored_with_a_value(workbooks):
    for case, data in workbooks.items():
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            for name in z.namelist():
                if name.startswith("xl/worksheets/sheet"):
                    xml = z.read(name).decode()
                    cells = re.findall(r"<c [^>]*>(.*?)</c>", xml)
                    with_formula = [c for c in cells if "<f>" in c]
                    assert all("<v>" in c for c in with_formula), (case, name)


# --- inputs ------------------------------------------------------------------------------------

def test_inputs_are_named_cells_with_unit_source_and_as_of(documents, workbooks):
    wb = load(workbooks["eur-and-missing"], data_only=True)
    ws = wb["Inputs"]
    head = [c.value for c in ws[1]]
    named = {ws.cell(r, 1).value: r for r in range(2, ws.max_row + 1) if ws.cell(r, 1).value}
    assert len(named) >= 30
    for name, r in named.items():
        sheet, ref = next(wb.defined_names[name].destinations)
        assert (sheet, ref.replace("$", "")) == ("Inputs", f"D{r}")
        for column in ("Source", "As of"):
            assert ws.cell(r, head.index(column) + 1).value, (name, column)
    value = {name: ws.cell(r, 4).value for name, r in named.items()}
    unit = {name: ws.cell(r, 5).value for name, r in named.items()}
    assert value["bid_tw_cloud_price_per_gpu_hour"] == 95.5 and unit["bid_tw_cloud_price_per_gpu_hour"] == "TWD/GPU-h"
    assert value["fx_TWD"] == 31.518 and value["fx_EUR"] == 0.877657
    assert value["in_months_hours"] == 730
    assert value["bid_neocloud_3y_min_commit_months"] == 36
    assert value["bid_tw_cloud_step_time_basis"] == "modeled"
    assert "in_gpu_utilisation_power" in value


def test_the_converted_price_is_a_formula_over_the_fx_cells(workbooks):
    wb = load(workbooks["eur-and-missing"])
    sheet, ref = next(wb.defined_names["base_tw_cloud_price_per_gpu_hour"].destinations)
    assert wb[sheet][ref].value == "=ROUND(bid_tw_cloud_price_per_gpu_hour*all_fx_TWD,6)"     # money policy: 1e-6
    sheet, ref = next(wb.defined_names["all_fx_TWD"].destinations)
    assert wb[sheet][ref].value == ("=ROUND(fx_EUR/fx_TWD,in_fx_significant_digits-1-INT(LOG10(ABS("
                                    "fx_EUR/fx_TWD))))")


def test_power_and_colocation_follow_the_inputs_not_typed_numbers(workbooks):
    wb = load(workbooks["example"])
    lines = wb["Cost lines"]
    by_line = {(lines.cell(r, 1).value, lines.cell(r, 2).value, lines.cell(r, 3).value): r
               for r in range(2, lines.max_row + 1)}
    for basis in ("run", "commitment"):
        power = by_line[("own-h100", f"Base, {basis} basis", "Power")]
        assert lines.cell(power, 7).value == "=base_own_h100_kw_per_gpu*in_gpu_utilisation_power*base_own_h100_pue"
        colo = by_line[("own-h100", f"Base, {basis} basis", "Colocation")]    # per kW of IT load: no PUE
        assert lines.cell(colo, 7).value == "=base_own_h100_kw_per_gpu*base_own_h100_used_hours"
        assert lines.cell(colo, 8).value == "=in_months_hours"
    sheet, ref = next(wb.defined_names["base_own_h100_kw_per_gpu"].destinations)       # the system's spec
    assert wb[sheet][ref].value == ("=bid_own_h100_node_power_kw/bid_own_h100_gpus_per_node"
                                    "+bid_own_h100_fabric_w_per_gpu/1000")
    sheet, ref = next(wb.defined_names["base_coreweave_h100_1y_billed_hours"].destinations)
    assert wb[sheet][ref].value == "=MAX(base_coreweave_h100_1y_used_hours,base_coreweave_h100_1y_commit_hours)"


# --- the scenario column, evaluated by the workbook's own evaluator ----------------------------

def _whatif(book, name: str, value) -> None:
    sheet, row, col = book.names[name]
    target = next(s for s in book.sheets if s.name == sheet)
    target.cells[(row, col)].content = Decimal(str(value))
    book._values.clear()


def _summary_value(book, bid: str, column: str):
    sheet = next(s for s in book.sheets if s.name == "Summary")
    head = [sheet.cells[(0, c)].content for c in range(60) if (0, c) in sheet.cells]
    row = next(r for (r, c), cell in sheet.cells.items() if c == 1 and cell.content == bid)
    return book.value("Summary", row, head.index(column))


def test_the_scenario_column_answers_what_ifs(documents):
    doc = documents["example"]
    book, _ = build_book(doc)
    # the chain rebuilds the run and commitment bases; the present value is the document's figure
    sheet, row, col = book.names["in_cost_basis"]
    next(s for s in book.sheets if s.name == sheet).cells[(row, col)].content = "commitment"
    aws = next(b for b in doc.bids if b.id == "aws-p5")
    base_days = _summary_value(book, "aws-p5", "Time to train (days)")
    _whatif(book, "whatif_aws_p5_mfu", "0.45")                      # the vendor only reaches 45% MFU
    step = Decimal(str(aws.flops.model_per_step)) / (4096 * Decimal("989.4e12") * Decimal("0.45"))
    assert abs(_summary_value(book, "aws-p5", "Scenario step time (s)") - step) < Decimal("1e-12")
    days = _summary_value(book, "aws-p5", "Scenario time to train (days)")
    assert abs(days / base_days - step / Decimal(str(aws.step_time_s))) < Decimal("1e-9")
    assert _summary_value(book, "aws-p5", "Time to train (days)") == base_days     # Base unchanged
    _whatif(book, "whatif_coreweave_h100_1y_discount", "0.9")           # 90% off the reservation
    assert _summary_value(book, "coreweave-h100-1y", "Scenario total cost") == Decimal("8970240.00")
    per_mtok = {b.id: _summary_value(book, b.id, "Scenario USD per million tokens") for b in doc.bids}
    for bid_id, value in per_mtok.items():      # RANK over the scenario column, cheapest first
        assert _summary_value(book, bid_id, "Scenario rank") == 1 + sum(v < value for v in per_mtok.values())
    assert _summary_value(book, "coreweave-h100-1y", "Scenario rank") < _summary_value(book, "coreweave-h100-1y",
                                                                                      "Rank")
    _whatif(book, "whatif_own_h100_price", "67500")                     # capex doubled
    own = next(b for b in doc.bids if b.id == "own-h100")
    lines = next(s for s in book.sheets if s.name == "Cost lines")
    for basis in ("run", "commitment"):
        rows = {lines.cells[(r, 1)].content: r for (r, col), cell in lines.cells.items()
                if col == 0 and cell.content == "own-h100" and lines.cells[(r, 2)].content.startswith("Hardware")
                and lines.cells[(r, 1)].content.endswith(f"{basis} basis")}
        base, scenario = (book.value("Cost lines", rows[f"{case}, {basis} basis"], 8) for case in ("Base", "Scenario"))
        assert abs(scenario - 2 * base) <= Decimal("0.01")
    assert _summary_value(book, "own-h100", "Scenario total cost") > own.total_cost


# --- text, determinism ---------------------------------------------------------------------------

def test_user_strings_are_text_never_formulas(documents):
    plain = documents["example"].to_data()
    plain["bids"][0]["vendor"] = "Acme\x07 Cl\x1boud\x00"
    plain["bids"][1]["vendor"] = '=HYPERLINK("http://x","y")'
    plain["bids"][2]["cost_lines"][0]["label"] = "@SUM(A1:A9)"
    plain["title"] = "+cmd|' /C calc'!A0"
    hostile = validate_quote(plain, "hostile")
    data = render_xlsx(hostile)
    ws = load(data)["Summary"]
    vendors = {ws.cell(r, 2).value: ws.cell(r, 3) for r in range(2, ws.max_row + 1)}
    link = vendors[hostile.bids[1].id]
    assert link.value == '=HYPERLINK("http://x","y")' and link.data_type == "s" and link.quotePrefix
    assert vendors[hostile.bids[0].id].value == "Acme Cloud"
    texts = [f for _, _, f in formulas(data)]
    assert not any(f.startswith(("=HYPERLINK", "=SUM(A1", "=cmd", "+cmd")) for f in texts)


def test_byte_identical_for_the_same_document(documents, workbooks):
    again = render_xlsx(documents["example"].model_copy(deep=True))
    assert again == workbooks["example"]
    with zipfile.ZipFile(io.BytesIO(again)) as z:
        core = z.read("docProps/core.xml").decode()
    assert core.count("2026-12-01T00:00:00Z") == 2


def test_charts_follow_the_cells(workbooks):
    with zipfile.ZipFile(io.BytesIO(workbooks["example"])) as z:
        charts = [z.read(n).decode() for n in sorted(z.namelist()) if n.startswith("xl/charts/chart")]
    assert len(charts) == 3
    refs = " ".join(re.findall(r"<c:f>([^<]+)</c:f>", " ".join(charts)))
    head = [c.value for c in load(workbooks["example"])["Summary"][1]]
    for column in ("USD per million tokens", "Scenario USD per million tokens", "Days to finish",
                   "Scenario days to finish", "Deadline (days)"):
        letter = _col(head, column)
        assert f"Summary!${letter}$2:${letter}$6" in refs, column
    assert "'Step time'!$F$2:$F$6" in refs


# --- the expression trees --------------------------------------------------------------------------

class _Env:
    def __init__(self, cells: dict, names: dict):
        self.cells, self.names = cells, names

    def cell_value(self, sheet, row, col):
        return self.cells.get((sheet, row, col))

    def name_value(self, name):
        return self.names[name]


def test_expressions_write_the_formula_they_evaluate():
    env = _Env({("S", 0, 0): Decimal("2.675"), ("S", 1, 0): Decimal(3), ("S", 2, 0): "n/a"},
               {"a": Decimal(10), "b": Decimal(4)})
    a, b = Name("a"), Name("b")
    expr = a - (b - 1)
    assert expr.text("S") == "a-(b-1)" and expr.value(env) == 7
    assert (a / (b * 2)).text("S") == "a/(b*2)"
    assert call("ROUND", Ref("S", 0, 0), 2).value(env) == Decimal("2.68")       # half away from zero
    assert call("ROUNDUP", a / 3, 2).value(env) == Decimal("3.34")
    pool = Range("S", 0, 0, 2, 0, absolute=True)
    assert pool.text("T") == "'S'!$A$1:$A$3"
    assert call("RANK", Ref("S", 1, 0), pool, 1).value(env) == 2                   # text ignored
    assert call("COUNT", pool).value(env) == 2 and call("SUM", pool).value(env) == Decimal("5.675")
    assert call("IF", call("ISNUMBER", Ref("S", 2, 0)), 1, Num(Decimal(0))).value(env) == 0
    assert call("SQRT", Num(Decimal(2))).value(env) ** 2 - 2 < Decimal("1e-30")


# --- both cost bases (issue 12: bid.cost_bases.{run,commitment}, the document's cost_basis) --------

def test_both_cost_bases_are_blocks_of_the_same_chain(documents):
    doc = documents["example"]
    book, result = build_book(doc)
    assert result.mismatches == () and result.given_lines == ()
    coreweave = next(b for b in doc.bids if b.id == "coreweave-h100-1y")
    bases = coreweave.cost_bases
    assert _summary_value(book, "coreweave-h100-1y", "Commitment basis: total cost") == bases["commitment"].total_cost
    assert _summary_value(book, "coreweave-h100-1y", "Run basis: total cost") == bases["run"].total_cost
    ranked_on = doc.cost_basis
    assert _summary_value(book, "coreweave-h100-1y", "Total cost") == bases[ranked_on].total_cost
    other = "run" if ranked_on == "commitment" else "commitment"
    sheet, row, col = book.names["in_cost_basis"]
    next(s for s in book.sheets if s.name == sheet).cells[(row, col)].content = other
    book._values.clear()
    assert _summary_value(book, "coreweave-h100-1y", "Total cost") == bases[other].total_cost
    assert [_summary_value(book, b, "Rank") for b in doc.rankings[other]] == list(range(1, len(doc.bids) + 1))
    lines = next(s for s in book.sheets if s.name == "Cost lines")
    cases = {c.content for (r, col), c in lines.cells.items() if col == 1 and r > 0}
    assert cases == {"Base, run basis", "Base, commitment basis", "Scenario, run basis", "Scenario, commitment basis"}


def test_the_time_to_train_as_published_runs_went_follows_the_model_s(documents, workbooks):
    """A modeled bid's Summary row carries the time to train at published runs' pace: its model
    time to train times a named input (their pace over the model's, with its source); a measured
    bid has none."""
    doc, wb = documents["example"], load(workbooks["example"])
    ws = wb["Summary"]
    head, rows = summary_rows(ws)
    column = head.index("Time to train as published runs went (days)") + 1
    for bid in doc.bids:
        cell = ws.cell(rows[bid.id], column).value
        if bid.real_run is None:
            assert cell == "n/a", bid.id
            continue
        slug = bid.id.replace("-", "_").lower()
        assert cell == f"=base_{slug}_real_run_days"
        defined = wb.defined_names[f"base_{slug}_real_run_days"].attr_text
        sheet, ref = defined.split("!")
        formula = wb[sheet.strip("'")][ref.replace("$", "")].value
        assert formula == f"=base_{slug}_time_to_train_days*bid_{slug}_real_run_pace"
    assert any(b.real_run is None for b in doc.bids) and any(b.real_run for b in doc.bids)
