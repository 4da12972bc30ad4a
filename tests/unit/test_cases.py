"""Case folders: tests/cases/<case>/cluster.yaml with golden outputs in expected/.

The folder list is the test list. `pytest --update-goldens` rewrites the goldens; on mismatch
the actual output is written next to them under actual/ and a diff is shown.
"""

import difflib
import os
import shutil
from pathlib import Path

import pytest

from procure import api
from procure.jsontext import to_json_bytes

CASES_DIR = Path(__file__).resolve().parents[1] / "cases"
CASES = sorted(p for p in CASES_DIR.iterdir() if (p / "cluster.yaml").is_file())


def xlsx_dump(path: Path) -> str:
    """Every non-empty cell (a formula with the value it is stored with), the names, the charts."""
    import zipfile

    from openpyxl import load_workbook

    wb, values = load_workbook(path), load_workbook(path, data_only=True)
    lines = []
    for ws in wb.worksheets:
        lines.append(f"== {ws.title} (freeze {ws.freeze_panes})")
        for row in ws.iter_rows():
            for cell in row:
                if cell.value is None:
                    continue
                line = f"{ws.title}!{cell.coordinate}\t{cell.value!r}\t{cell.number_format}"
                if cell.data_type == "f":
                    value = values[ws.title][cell.coordinate].value
                    line += f"\t= {value:.10g}" if isinstance(value, float) else f"\t= {value!r}"
                lines.append(line)
    lines += [f"name {name} = {d.attr_text}" for name, d in sorted(wb.defined_names.items())]
    with zipfile.ZipFile(path) as z:
        lines += [f"chart {n}" for n in sorted(z.namelist()) if n.startswith("xl/charts/chart")]
    return "\n".join(lines) + "\n"


def compare_golden(case: Path, name: str, actual: str) -> None:
    expected_path = case / "expected" / name
    if os.environ.get("PROCURE_UPDATE_GOLDENS") == "1":
        expected_path.parent.mkdir(exist_ok=True)
        expected_path.write_text(actual, encoding="utf-8")
        return
    assert expected_path.exists(), f"no golden {expected_path}; run pytest --update-goldens"
    expected = expected_path.read_text(encoding="utf-8")
    if actual != expected:
        (case / "actual").mkdir(exist_ok=True)
        (case / "actual" / name).write_text(actual, encoding="utf-8")
        diff = "".join(list(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                                 f"expected/{name}", f"actual/{name}"))[:80])
        pytest.fail(f"{case.name}/{name} differs from its golden:\n{diff}")
    elif (case / "actual").exists():
        shutil.rmtree(case / "actual")


@pytest.fixture(scope="module")
def documents():
    return {case.name: api.quote_document(case / "cluster.yaml") for case in CASES}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_json(case, documents):
    compare_golden(case, "result.json", to_json_bytes(documents[case.name].to_data()).decode())


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_html_and_xlsx(case, documents, tmp_path):
    from procure.report import render

    written = render(documents[case.name], ["html", "xlsx"], tmp_path, "report")
    html = next(p for p in written if p.suffix == ".html")
    xlsx = next(p for p in written if p.suffix == ".xlsx")
    compare_golden(case, "report.html", html.read_text(encoding="utf-8"))
    compare_golden(case, "workbook.txt", xlsx_dump(xlsx))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_is_deterministic(case, documents):
    again = api.quote_document(case / "cluster.yaml")
    assert to_json_bytes(again.to_data()) == to_json_bytes(documents[case.name].to_data())


def test_the_example_case_is_the_shipped_example():
    """The example's goldens only guard the quick start while the case is a true copy of it."""
    shipped = Path(__file__).resolve().parents[2] / "examples"
    case = CASES_DIR / "example"
    assert (case / "cluster.yaml").read_bytes() == (shipped / "cluster.yaml").read_bytes()
    for log in (shipped / "logs").iterdir():
        assert (case / "logs" / log.name).read_bytes() == log.read_bytes(), log.name
