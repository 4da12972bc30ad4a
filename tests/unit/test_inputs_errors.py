"""tests/errors/<case>.yaml with the expected `procure validate` text next to it (<case>.expected)."""

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from procure.cli import main

CASES = sorted((Path(__file__).resolve().parents[1] / "errors").glob("*.yaml"))


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_validate_reports_every_problem_at_its_position(case, monkeypatch):
    monkeypatch.chdir(case.parent)
    result = CliRunner().invoke(main, ["validate", case.name])
    assert result.exit_code == 1, result.output
    expected_path = case.with_suffix(".expected")
    if os.environ.get("PROCURE_UPDATE_GOLDENS") == "1":
        expected_path.write_text(result.output, encoding="utf-8")
    assert result.output == expected_path.read_text(encoding="utf-8")
    assert "Traceback" not in result.output
