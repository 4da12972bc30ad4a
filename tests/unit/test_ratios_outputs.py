"""Issue 18: the committee's ratios appear in every output (JSON, terminal, HTML, PDF, XLSX) and
equal their definitions over the reported terms; the workbook computes them (and time to
target) as formulas over its own cells.

The documents are the goldens of tests/cases/time-to-target (a 100,000-GPU bid with a token
penalty, commitments at other conditions) and tests/cases/example (a fixed batch): the goldens
are checked against a fresh quote by test_cases, so what is read here is what a quote writes."""

from __future__ import annotations

import copy
import io
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import openpyxl
import pytest
from rich.console import Console

from procure.document import QuoteDocument, load_quote, validate_quote
from procure.report import render_bytes, render_terminal
from procure.report.xlsx_report import render_xlsx
from procure.report.messages import catalog
from procure.report.xlsx_sheets import term_keys

CASES = Path(__file__).resolve().parents[1] / "cases"
KEYS = ("bubble_ratio", "comm_to_compute", "overlap_efficiency", "exposed_comm_share", "effective_tokens_per_s_per_gpu")
EXPOSED = ("tp_comm_s", "pp_comm_s", "dp_comm_exposed_s", "ep_comm_s", "cp_comm_s")
SIX_DIGITS = 2e-5
SOFFICE = shutil.which("soffice") or shutil.which("libreoffice")


def golden(case: str) -> dict:
    return load_quote((CASES / case / "expected" / "result.json").read_bytes(), case).to_data()


@pytest.fixture(scope="module")
def docs() -> dict[str, dict]:
    return {case: golden(case) for case in ("time-to-target", "example")}


@pytest.fixture(scope="module")
def doc(docs) -> dict:
    return docs["time-to-target"]


def definitions(bid: dict) -> dict[str, float | None]:
    """The ratios from their definitions (methodology) over the bid's reported terms."""
    terms, modeled = bid["step_time_terms"], bid["modeled"]["step_time_s"]
    exposed = sum(terms.get(k) or 0.0 for k in EXPOSED)
    hidden = max(terms["comm_overlappable_s"] - terms["comm_exposed_s"], 0.0)
    overlappable = terms["comm_overlappable_s"]
    return {"bubble_ratio": terms["bubble_s"] / modeled,
            "comm_to_compute": (exposed + hidden) / terms["compute_s"],
            "overlap_efficiency": hidden / overlappable if overlappable > 0 else None,
            "exposed_comm_share": exposed / modeled,
            "effective_tokens_per_s_per_gpu": bid["tokens_per_step"] / bid["step_time_s"] / bid["gpus"]
            * bid["goodput"]["fraction"] / bid["batch"]["token_factor"]}


def planned(doc: dict) -> list[dict]:
    return [b for b in doc["bids"] if b["plan"] is not None]


def shown(text: str) -> tuple[float, float]:
    """A displayed ratio as (value, half a unit of its last digit): '2.7%', '0.48', '2,181 tokens/s'."""
    number = re.search(r"-?[\d,]+(?:\.\d+)?", text)
    assert number, text
    digits = number.group().replace(",", "")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    value, half = float(digits), 0.5 * 10 ** -decimals
    if "%" in text:
        return value / 100, half / 100
    return value, half


def assert_shown(text: str, expected: float | None, where: str) -> None:
    if expected is None:
        assert text.strip() in ("n/a", "—"), (where, text)
        return
    value, half = shown(text)
    # the displayed digit may round a value computed from six-digit terms either way
    assert abs(value - expected) <= half + abs(expected) * 5 * SIX_DIGITS, (where, text, expected)


def test_json_ratios_equal_their_definitions(docs):
    checked = 0
    for doc in docs.values():
        for bid in planned(doc):
            for key, expected in definitions(bid).items():
                if expected is None:
                    assert bid["ratios"][key] is None
                else:
                    assert bid["ratios"][key] == pytest.approx(expected, rel=5 * SIX_DIGITS), (bid["id"], key)
                    checked += 1
            assert {d["key"] for d in doc["methodology"]["ratios"]} == set(KEYS)
    assert checked >= 40


# --- terminal --------------------------------------------------------------------------------

def terminal_rows(doc: dict, width: int = 200) -> dict[str, list[str]]:
    console = Console(record=True, width=width, color_system=None)
    render_terminal(validate_quote(doc, "case"), console)
    text = console.export_text()
    table = text[text.index("Ratios side by side"):]
    rows = {}
    for line in table.splitlines():
        cells = re.split(r"\s{2,}", line.strip())     # the terminal layer's table: columns apart by spaces
        if cells and cells[0] in {b["id"] for b in doc["bids"]}:
            rows[cells[0]] = cells[1:]
    return rows


def test_terminal_ratios_equal_their_definitions(doc):
    rows = terminal_rows(doc)
    for bid in planned(doc):
        cells = rows[bid["id"]]
        assert_shown(cells[1], bid["batch"]["token_penalty"], bid["id"])
        for key, text in zip(KEYS, cells[2:]):
            assert_shown(text, definitions(bid)[key], f"{bid['id']} {key}")
    assert rows["h100-100k"][1] == "+13.6%" and rows["h100-100k"][0] == "21.0M"


def test_narrow_terminal_prints_every_ratio_unbroken(doc):
    out = io.StringIO()
    render_terminal(validate_quote(doc, "case"), Console(file=out, width=80, no_color=True))
    text = out.getvalue()
    block = " ".join(text[text.index("Ratios side by side"):text.index("Flags explained")].split())
    for bid in planned(doc):      # the long layout: the bid, then "label: value" per column
        assert f"{bid['id']} Batch (tokens):" in block
        assert f"Bubble ratio: {bid['ratios']['bubble_ratio'] * 100:.1f}%" in block


# --- HTML and PDF ----------------------------------------------------------------------------

class Tables(HTMLParser):
    """Rows of the tables of one class, each row as its cells' text."""

    def __init__(self, css_class: str):
        super().__init__()
        self.css_class, self.depth, self.rows, self.cell = css_class, 0, [], None

    def handle_starttag(self, tag, attrs):
        classes = (dict(attrs).get("class") or "").split()
        if tag == "table" and self.css_class in classes:
            self.depth = 1
        elif tag == "table" and self.depth:
            self.depth += 1
        elif self.depth and tag == "tr":
            self.rows.append([])
        elif self.depth and tag in ("td", "th"):
            self.cell = ""

    def handle_endtag(self, tag):
        if tag == "table" and self.depth:
            self.depth -= 1
        elif self.depth and tag in ("td", "th") and self.cell is not None:
            self.rows[-1].append(self.cell.strip())
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def table_rows(html: str, css_class: str) -> list[list[str]]:
    parser = Tables(css_class)
    parser.feed(html)
    return parser.rows


def bid_sections(html: str, doc: dict) -> dict[str, str]:
    parts = html.split('<section class="bid"')[1:]
    out = {}
    for part in parts:
        head = re.search(r'id="bid-[^"]*?-([^"]+)"', part)
        assert head
        out[head.group(1)] = part.split("</section>")[0]
    assert set(out) == {b["id"] for b in doc["bids"]}
    return out


@pytest.fixture(scope="module")
def html(doc) -> str:
    return render_bytes(QuoteDocument.model_validate(doc), ["html"])["html"].decode("utf-8")


def test_html_ratios_equal_their_definitions_on_every_bid_page(doc, html):
    sections = bid_sections(html, doc)
    for bid in planned(doc):
        rows = [r for r in table_rows(sections[bid["id"]], "ratios") if len(r) == 3 and r[0] != "Ratio"]
        assert [r[0] for r in rows] == ["Bubble ratio", "Communication-to-computation", "Overlap efficiency",
                                         "Exposed communication share", "Effective tokens/s per GPU"]
        for key, row in zip(KEYS, rows):
            assert_shown(row[1], definitions(bid)[key], f"{bid['id']} {key}")


def test_html_compares_the_ratios_side_by_side(doc, html):
    rows = {r[0]: r[1:] for r in table_rows(html, "ratios-compare") if r and r[0] != "Bid"}
    for bid in planned(doc):
        cells = rows[bid["id"]]
        assert_shown(cells[1], bid["batch"]["token_penalty"], bid["id"])
        for key, text in zip(KEYS, cells[2:]):
            assert_shown(text, definitions(bid)[key], f"{bid['id']} {key}")


def test_html_defines_the_ratios_and_the_law_in_the_methodology(doc, html):
    method = html[html.index('class="methodology methodology-target"'):]
    for d in doc["methodology"]["ratios"]:
        assert d["description"].replace("'", "&#39;") in method
    law = doc["methodology"]["statistical_efficiency"]
    assert "Statistical efficiency of the global batch" in method
    names = catalog("en")
    for name in law["parameters"]:      # named in words, the key never printed
        assert f'<td>{names[f"law_param.{name}"]}</td>' in method
        assert f">{name}<" not in method


def test_html_time_to_target_puts_the_penalty_on_its_own_line(doc, html):
    rows = [r for r in table_rows(html, "target") if r and r[0] != "Bid"]
    penalty = [r for r in rows if any(c.startswith("Statistical-efficiency penalty") for c in r)]
    assert len(penalty) == len(doc["bids"])
    big = next(i for i, r in enumerate(rows) if r[0].startswith("h100-100k"))
    assert rows[big + 1][0] == "Statistical-efficiency penalty (+13.6%)"
    ttt = next(b for b in doc["bids"] if b["id"] == "h100-100k")["time_to_target"]
    assert rows[big + 1][1:] == [f"{ttt['penalty_tokens'] / 1e12:.1f}T", f"{ttt['penalty_days']:.1f} days",
                                 f"${ttt['penalty_cost']:,.2f}"]
    assert rows[big + 2][1:] == [f"{ttt['equivalent_tokens'] / 1e12:.1f}T", f"{ttt['days']:.1f} days",
                                 f"${ttt['cost']:,.2f}"]
    assert ttt["penalty_cost"] > 0 and ttt["penalty_days"] > 0


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="pdftotext (poppler-utils) is not installed")
def test_pdf_ratios_equal_their_definitions(doc, tmp_path):
    small = copy.deepcopy(doc)
    small["bids"] = [b for b in doc["bids"] if b["id"] in ("h100-100k", "b200-fp8-commit")]
    small["ranking"] = [i for i in doc["ranking"] if i in ("h100-100k", "b200-fp8-commit")]
    pdf = render_bytes(QuoteDocument.model_validate(small), ["pdf"])["pdf"]
    path = tmp_path / "r.pdf"
    path.write_bytes(pdf)
    text = subprocess.run(["pdftotext", "-layout", "-enc", "UTF-8", str(path), "-"], capture_output=True,
                          check=True).stdout.decode("utf-8")
    labels = ("Bubble ratio", "Communication-to-computation", "Overlap efficiency", "Exposed communication share",
              "Effective tokens/s per GPU")
    for bid in small["bids"]:
        pages = "\n".join(p for p in text.split("\f") if re.search(rf"Bid \d+: {re.escape(bid['id'])}\s*\n", p))
        for key, label in zip(KEYS, labels):
            found = re.search(rf"^\s*{re.escape(label)}\s+([\d,.]+(?:%| tokens/s)?)", pages, re.MULTILINE)
            assert found, (bid["id"], label)
            assert_shown(found.group(1), definitions(bid)[key], f"pdf {bid['id']} {key}")
    assert "Ratios: definitions" in text and "Time to target" in text


# --- XLSX ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def quote(doc) -> QuoteDocument:
    return validate_quote(doc, "time-to-target")


@pytest.fixture(scope="module")
def xlsx(quote) -> bytes:
    return render_xlsx(quote)


def test_workbook_ratios_are_formulas_over_the_step_time_terms(quote, xlsx):
    wb = openpyxl.load_workbook(io.BytesIO(xlsx))
    assert wb.sheetnames.index("Ratios") == wb.sheetnames.index("Step time") + 1
    steps, ratios, target = wb["Step time"], wb["Ratios"], wb["Time to target"]
    # the Step time sheet's term columns (headers are the terms' labels): F onwards, in term_keys order
    column = {key: openpyxl.utils.get_column_letter(6 + i) for i, key in enumerate(term_keys(quote.bids))}
    for r in range(2, ratios.max_row + 1):
        bid_id = ratios.cell(r, 1).value
        assert steps.cell(r, 1).value == bid_id and target.cell(r, 1).value == bid_id
        def st(key: str, row: int = r) -> str:
            return f"'Step time'!{column[key]}{row}"

        assert ratios.cell(r, 2).value == f"={st('bubble_s')}/'Step time'!D{r}"
        assert ratios.cell(r, 3).value == f"=(G{r}+H{r})/{st('compute_s')}"
        assert ratios.cell(r, 4).value == f"=H{r}/{st('comm_overlappable_s')}"
        assert ratios.cell(r, 5).value == f"=G{r}/'Step time'!D{r}"
        assert ratios.cell(r, 6).value == f"=I{r}/J{r}/K{r}*L{r}/M{r}"
        assert ratios.cell(r, 7).value == "=" + "+".join(st(k) for k in EXPOSED)
        assert ratios.cell(r, 8).value == f"=MAX({st('comm_overlappable_s')}-{st('comm_exposed_s')},0)"
        # the token factor is the bid's input when its batch is its own (the chain's time reads it too)
        assert target.cell(r, 5).value in ("=1", f"=bid_{bid_id.replace('-', '_')}_token_factor")
        assert target.cell(r, 10).value == f"=base_{bid_id.replace('-', '_')}_time_to_train_days"
        assert target.cell(r, 12).value == (f"=in_train_tokens*(E{r}-1)/base_{bid_id.replace('-', '_')}_tokens_per_s"
                                            f"/base_{bid_id.replace('-', '_')}_goodput/86400")


def test_workbook_without_terms_says_not_available(doc):
    odd = copy.deepcopy(doc)
    odd["bids"][0]["step_time_terms"] = {}
    odd["bids"][0]["ratios"] = dict.fromkeys(KEYS)
    ws = openpyxl.load_workbook(io.BytesIO(render_xlsx(validate_quote(odd, "odd"))))["Ratios"]
    row = next(r for r in range(2, ws.max_row + 1) if ws.cell(r, 1).value == odd["bids"][0]["id"])
    assert [ws.cell(row, c).value for c in range(2, 7)] == ["n/a"] * 5


@pytest.mark.slow
@pytest.mark.skipif(SOFFICE is None, reason="LibreOffice (soffice) is not installed")
def test_libreoffice_recalculates_ratios_and_time_to_target_to_the_document(doc, xlsx, tmp_path):
    src = tmp_path / "in.xlsx"
    src.write_bytes(xlsx)
    subprocess.run([SOFFICE, f"-env:UserInstallation={(tmp_path / 'lo').as_uri()}", "--headless", "--norestore",
                    "--convert-to", "xlsx", "--outdir", str(tmp_path / "out"), str(src)],
                   check=True, capture_output=True, timeout=180)
    wb = openpyxl.load_workbook(tmp_path / "out" / "in.xlsx", data_only=True)
    ratios, target = wb["Ratios"], wb["Time to target"]
    bids = {b["id"]: b for b in doc["bids"]}
    ttt_keys = ("token_factor", "token_penalty", "target_tokens", "equivalent_tokens", "penalty_tokens", "days",
                "days_at_target_tokens", "penalty_days", "cost", "cost_at_target_tokens", "penalty_cost")
    for r in range(2, ratios.max_row + 1):
        bid = bids[ratios.cell(r, 1).value]
        for c, key in enumerate(KEYS, start=2):
            got, want = ratios.cell(r, c).value, definitions(bid)[key]
            assert got == pytest.approx(want, rel=5 * SIX_DIGITS), (bid["id"], key)
        ttt = bid["time_to_target"]
        for c, key in enumerate(ttt_keys, start=5):
            got, want = target.cell(r, c).value, float(ttt[key])
            money = key.startswith("cost") or key == "penalty_cost"
            assert got == pytest.approx(want, rel=5 * SIX_DIGITS, abs=0.01 if money else 1e-9), (bid["id"], key)


def test_a_document_without_ratios_or_time_to_target_prints_neither():
    """A saved document from before issue 18 (the sample) renders without empty tables."""
    sample = Path(__file__).resolve().parents[1] / "fixtures" / "quote_sample.json"
    doc = load_quote(sample.read_bytes(), "sample")
    console = Console(record=True, width=200, color_system=None)
    render_terminal(doc, console)
    assert "Ratios side by side" not in console.export_text()
    html = render_bytes(doc, ["html"])["html"].decode("utf-8")
    for marker in ('<section class="time-to-target', 'class="grid ratios', 'methodology-target">'):
        assert marker not in html
