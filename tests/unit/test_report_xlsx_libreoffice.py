"""The workbook recalculated by a real spreadsheet engine (LibreOffice headless).

Unchanged, every formula recalculates to the value it was stored with. Edited (a quoted price, an
FX rate, a step time, a minimum commitment, the power utilisation), every dependent result moves,
rank included, and equals a fresh ``procure quote`` on the correspondingly edited inputs to 0.01%.
The Scenario column's what-ifs recalculate to what the workbook's own evaluator computed. Skipped
with a reason where soffice is not installed.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import zipfile
from decimal import Decimal
from pathlib import Path

import openpyxl
import pytest
import yaml

from procure import api
from procure.catalog.load import load_catalog
from procure.document import validate_quote
from procure.inputs import bundle
from procure.report.xlsx_report import build_book, render_xlsx
from procure.resources import price_books_dir

SOFFICE = shutil.which("soffice") or shutil.which("libreoffice")
CASES = Path(__file__).resolve().parents[1] / "cases"
REL_TOL = Decimal("1e-4")           # 0.01 %
pytestmark = [pytest.mark.slow, pytest.mark.skipif(SOFFICE is None, reason="LibreOffice (soffice) is not installed")]

# Recalculate every formula on load, whatever values the file carries.
RECALC_ALWAYS = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema">
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="OOXMLRecalcMode" oor:op="fuse"><value>0</value></prop></item>
</oor:items>
"""


def libreoffice(files: list[Path], out: Path, tmp: Path) -> None:
    profile = tmp / "lo-profile"
    (profile / "user").mkdir(parents=True, exist_ok=True)
    (profile / "user" / "registrymodifications.xcu").write_text(RECALC_ALWAYS, encoding="utf-8")
    subprocess.run([SOFFICE, f"-env:UserInstallation={profile.as_uri()}", "--headless", "--norestore",
                    "--convert-to", "xlsx", "--outdir", str(out), *map(str, files)],
                   check=True, capture_output=True, timeout=600)


def with_inputs(data: bytes, values: dict[str, object]) -> bytes:
    """The workbook with named cells set (as a user types them); openpyxl drops stored values."""
    wb = openpyxl.load_workbook(io.BytesIO(data))
    for name, value in values.items():
        sheet, ref = next(wb.defined_names[name].destinations)
        wb[sheet][ref].value = value
    buffer = io.BytesIO()
    wb.save(buffer)
    return buffer.getvalue()


def summary(path: Path) -> dict[str, dict[str, object]]:
    ws = openpyxl.load_workbook(path, data_only=True)["Summary"]
    head = [c.value for c in ws[1]]
    return {ws.cell(r, 2).value: {h: ws.cell(r, i + 1).value for i, h in enumerate(head)}
            for r in range(2, ws.max_row + 1) if ws.cell(r, 2).value}


def _books_with(tmp: Path, file: str, edit) -> Path:
    books = tmp / "books"
    if not books.exists():
        shutil.copytree(price_books_dir(), books)
    path = books / file
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return books


def _line(book: dict, accelerator: str, term: str) -> dict:
    return next(line for line in book["lines"] if line["accelerator"] == accelerator and line["term"] == term)


#: The chain rebuilds the run and commitment bases by formula; the present value is the document's
#: figure on Summary until a cash-flow sheet computes it, so the edits rank on the commitment basis.
LIVE_BASIS = "present_value"


def _case_copy(tmp: Path, case: str) -> Path:
    target = tmp / f"case-{case}"
    shutil.copytree(CASES / case, target, ignore=shutil.ignore_patterns("expected", "actual"))
    return target / "cluster.yaml"


def fresh_quote(cluster: Path, books: Path | None = None, basis: str = LIVE_BASIS) -> dict:
    with pytest.MonkeyPatch.context() as mp:
        if books is not None:
            catalog = load_catalog(books_root=books)
            mp.setattr(bundle, "default_catalog", lambda: catalog)
        return api.quote_document(cluster, basis=basis).to_data()


def _edit_price(tmp: Path):
    books = _books_with(tmp / "price", "aws-2026q3.yaml",
                        lambda b: _line(b, "h100-sxm5-80gb", "on-demand").update(price_per_gpu_hour="3.00"))
    return "example", {"bid_aws_p5_price_per_gpu_hour": 3.0}, fresh_quote(CASES / "example" / "cluster.yaml", books)


def _edit_fx(tmp: Path):
    def edit(fx: dict) -> None:
        table = next(t for t in fx["tables"] if str(t["as_of"]) == "2026-06-30")
        table["rates"]["TWD"] = "28.5"
    books = _books_with(tmp / "fx", "fx.yaml", edit)
    return "eur-and-missing", {"fx_TWD": 28.5}, fresh_quote(CASES / "eur-and-missing" / "cluster.yaml", books)


def _edit_commitment(tmp: Path):
    books = _books_with(tmp / "commit", "neocloud-reserved-2026q3.yaml",
                        lambda b: _line(b, "h100-sxm5-80gb", "reserved-1y").update(min_commit_months=1))
    return "example", {"bid_coreweave_h100_1y_min_commit_months": 1}, \
        fresh_quote(CASES / "example" / "cluster.yaml", books)


def _edit_utilisation(tmp: Path):
    cluster = _case_copy(tmp / "util", "example")
    text = cluster.read_text(encoding="utf-8").replace("assumptions:\n", "assumptions:\n  gpu_utilisation_power: 0.5\n")
    cluster.write_text(text, encoding="utf-8")
    return "example", {"in_gpu_utilisation_power": 0.5}, fresh_quote(cluster)


def _edit_step_time(tmp: Path):
    cluster = _case_copy(tmp / "step", "measured-sla")
    log = cluster.parent / "logs" / "burnin.log"
    faster = re.sub(r"(elapsed time per iteration \(ms\): )([\d.]+)",
                    lambda m: f"{m.group(1)}{float(m.group(2)) * 0.6:.1f}", log.read_text(encoding="utf-8"))
    log.write_text(faster, encoding="utf-8")
    doc = fresh_quote(cluster)
    measured = next(b for b in doc["bids"] if b["id"] == "burned-in")["measured"]["step_time_s"]["mean"]
    return "measured-sla", {"bid_burned_in_measured_step_time_s": measured}, doc


EDITS = {"price": _edit_price, "fx": _edit_fx, "min_commitment": _edit_commitment,
         "utilisation": _edit_utilisation, "step_time": _edit_step_time}
# what each edit must move: the bids whose total changes, and those whose rank changes
MOVES = {"price": ({"aws-p5"}, {"aws-p5"}),
         "fx": ({"tw-cloud"}, set()),
         "min_commitment": ({"coreweave-h100-1y"}, {"coreweave-h100-1y"}),
         "utilisation": ({"own-h100"}, set()),
         "step_time": ({"burned-in"}, {"burned-in", "modeled-only"})}
WHATIFS = {"whatif_aws_p5_mfu": 0.45, "whatif_lambda_b200_discount": 0.3, "whatif_own_h100_price": 90000,
           "whatif_coreweave_h100_1y_step_time_s": 2.6,
           # the scenario column rebuilds the run and commitment bases (present value: no scenario cash)
           "in_cost_basis": "commitment"}


@pytest.fixture(scope="module")
def recalculated(tmp_path_factory):
    """Every workbook LibreOffice recalculates, in one run: originals, edited, and what-ifs."""
    tmp = tmp_path_factory.mktemp("xlsx-lo")
    originals = {case: api.quote_document(CASES / case / "cluster.yaml", basis=LIVE_BASIS).to_data()
                 for case in ("example", "eur-and-missing", "measured-sla")}
    files, edits = {}, {}
    for case, doc in originals.items():
        files[f"original-{case}"] = render_xlsx(validate_quote(doc, case))
    for name, make in EDITS.items():
        case, values, fresh = make(tmp)
        edits[name] = (case, values, fresh)
        files[f"edit-{name}"] = with_inputs(files[f"original-{case}"], values)
    files["whatif"] = with_inputs(files["original-example"], WHATIFS)
    src, out = tmp / "src", tmp / "out"
    src.mkdir()
    for name, data in files.items():
        (src / f"{name}.xlsx").write_bytes(data)
    libreoffice(sorted(src.iterdir()), out, tmp)
    return {"originals": originals, "edits": edits, "files": files, "out": out}


def _close(got, want) -> bool:
    got, want = Decimal(str(got)), Decimal(str(want))
    return abs(got - want) <= REL_TOL * max(abs(want), Decimal("1e-12"))


@pytest.mark.parametrize("case", ["example", "eur-and-missing", "measured-sla"])
def test_libreoffice_recalculates_every_formula_to_its_stored_value(recalculated, case):
    stored = openpyxl.load_workbook(io.BytesIO(recalculated["files"][f"original-{case}"]), data_only=True)
    formulas = openpyxl.load_workbook(io.BytesIO(recalculated["files"][f"original-{case}"]))
    engine = openpyxl.load_workbook(recalculated["out"] / f"original-{case}.xlsx", data_only=True)
    checked = 0
    for ws in formulas.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                if cell.data_type != "f":
                    continue
                want, got = stored[ws.title][cell.coordinate].value, engine[ws.title][cell.coordinate].value
                checked += 1
                if isinstance(want, (int, float)):
                    assert isinstance(got, (int, float)) and abs(got - want) <= 1e-9 * max(abs(want), 1e-9), \
                        (ws.title, cell.coordinate, cell.value, want, got)
                else:
                    assert got == want, (ws.title, cell.coordinate, cell.value, want, got)
    assert checked > 100


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edited_input_moves_every_result_to_a_fresh_quote(recalculated, edit):
    case, values, fresh = recalculated["edits"][edit]
    before = {b["id"]: b for b in recalculated["originals"][case]["bids"]}
    after = summary(recalculated["out"] / f"edit-{edit}.xlsx")
    per_mtok = f"{fresh['currency']} per million tokens"
    moved, ranks = MOVES[edit]
    for bid in fresh["bids"]:
        row = after[bid["id"]]
        assert row["Rank"] == bid["rank"], (edit, bid["id"], row["Rank"], bid["rank"])
        for column, key in (("Total cost", "total_cost"), (per_mtok, "cost_per_million_tokens"),
                            ("Time to train (days)", "time_to_train_days"), ("Billed hours", "billed_hours")):
            if bid[key] is None:
                continue
            assert _close(row[column], bid[key]), (edit, bid["id"], column, row[column], bid[key])
        if bid["id"] in moved:
            assert bid["total_cost"] != before[bid["id"]]["total_cost"], (edit, bid["id"])
    for bid_id in ranks:
        assert after[bid_id]["Rank"] != before[bid_id]["rank"], (edit, bid_id)


def test_the_utilisation_moves_the_energy_of_every_bid(recalculated):
    _, _, fresh = recalculated["edits"]["utilisation"]
    wb = openpyxl.load_workbook(recalculated["out"] / "edit-utilisation.xlsx", data_only=True)
    for bid in fresh["bids"]:
        name = "base_" + re.sub(r"[^a-z0-9_]", "_", bid["id"]) + "_energy_mwh"
        sheet, ref = next(wb.defined_names[name].destinations)
        assert Decimal(str(wb[sheet][ref].value)) == bid["energy_mwh"], bid["id"]


def test_the_scenario_column_recalculates_to_the_workbooks_own_values(recalculated):
    doc = recalculated["originals"]["example"]
    book, _ = build_book(validate_quote(doc, "example"))
    for name, value in WHATIFS.items():
        sheet, row, col = book.names[name]
        next(s for s in book.sheets if s.name == sheet).cells[(row, col)].content = \
            value if isinstance(value, str) else Decimal(str(value))
    book._values.clear()
    engine = summary(recalculated["out"] / "whatif.xlsx")
    sheet = next(s for s in book.sheets if s.name == "Summary")
    head = [sheet.cells[(0, c)].content for c in range(60) if (0, c) in sheet.cells]
    scenario = [h for h in head if str(h).startswith("Scenario")]
    moved = 0
    for r in range(1, len(doc["bids"]) + 1):
        bid_id = sheet.cells[(r, 1)].content
        for column in scenario:
            want = book.value("Summary", r, head.index(column))
            got = engine[bid_id][column]
            if isinstance(want, Decimal):
                assert _close(got, want), (bid_id, column, got, want)
            else:
                assert got == want, (bid_id, column, got, want)
        moved += engine[bid_id]["Scenario total cost"] != engine[bid_id]["Total cost"]
    assert moved == 3           # the reservation bills its full year whatever the step time ...
    coreweave = engine["coreweave-h100-1y"]
    assert coreweave["Scenario time to train (days)"] < coreweave["Time to train (days)"]   # ... but ends sooner
    assert any(row["Scenario rank"] != row["Rank"] for row in engine.values())     # the what-ifs re-rank


def test_libreoffice_keeps_the_charts(recalculated):
    with zipfile.ZipFile(recalculated["out"] / "original-example.xlsx") as z:
        charts = [n for n in z.namelist() if n.startswith("xl/charts/chart")]
    assert len(charts) == 3
