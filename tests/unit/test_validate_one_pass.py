"""`procure validate` reports every problem in one pass, the schema's cross-field rules included,
each once and at the field it is about; messages quote the user's text and patterns as written."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from procure.cli import main

HEAD = """\
schema: procure/v1
title: t
as_of: 2026-12-01
workload:
  model: llama3-70b
  seq_len: 8192
  global_batch_tokens: {tokens}
  train_tokens: 15e12
  precision: {precision}
bids:
"""
BID = """\
  - id: {id}
    vendor: {vendor}
    accelerator: h100-sxm5-80gb
    gpus: {gpus}
    pricing: {pricing}
"""


def cluster(tmp_path: Path, *, tokens="16777216", precision="bf16", bids=None) -> Path:
    bids = bids or [dict(id="a", vendor="A", gpus=8, pricing="{usd_per_gpu_hour: 2.0}")]
    path = tmp_path / "cluster.yaml"
    path.write_text(HEAD.format(tokens=tokens, precision=precision) + "".join(BID.format(**b) for b in bids),
                    encoding="utf-8")
    return path


def validate(path: Path) -> list[str]:
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    return [line.split(": ", 1)[1] for line in result.stderr.splitlines()]


def test_cross_field_problems_come_in_the_same_pass_as_the_others(tmp_path):
    path = cluster(tmp_path, tokens="1000", precision="bf32", bids=[
        dict(id="a", vendor="A", gpus=-1, pricing="{usd_per_gpu_hour: 2.0}"),
        dict(id="a", vendor="B", gpus=8, pricing="{price_book: aws-2026q3}"),
    ])
    problems = validate(path)
    text = "\n".join(problems)
    # field problems, which used to hide the rules across fields until they were fixed ...
    assert "`workload.precision` is 'bf32'" in text and "`bids[0].gpus` must be greater than 0" in text
    # ... and those rules, in the same run, each at its own line
    assert any(p.startswith("error[invalid]: global_batch_tokens 1000 is not a multiple of seq_len 8192")
               for p in problems)
    assert any("bid id 'a' appears twice" in p for p in problems)
    assert any("a `price_book` needs a `term`" in p for p in problems)


def test_each_rule_is_reported_once_when_it_is_the_only_problem(tmp_path):
    for bids, needle in (
        ([dict(id="a", vendor="A", gpus=8, pricing="{usd_per_gpu_hour: 2.0}")] * 2, "appears twice"),
        ([dict(id="a", vendor="A", gpus=8, pricing="{usd_per_gpu_hour: 2.0, price_book: aws-2026q3, term: on-demand}")],
         "not both"),
        ([dict(id="a", vendor="A", gpus=8, pricing="{kind: rental}")], "give a `price_book` and `term`"),
    ):
        problems = validate(cluster(tmp_path, bids=bids))
        assert len(problems) == 1 and needle in problems[0], problems
    problems = validate(cluster(tmp_path, tokens="1000"))
    assert len(problems) == 1 and "is not a multiple of seq_len" in problems[0], problems


def test_the_duplicate_is_reported_at_the_second_id_and_names_the_first(tmp_path):
    path = cluster(tmp_path, bids=[dict(id="a", vendor="A", gpus=8, pricing="{usd_per_gpu_hour: 2.0}")] * 2)
    result = CliRunner().invoke(main, ["validate", str(path)])
    line = result.stderr.strip()
    assert line.startswith(f"{path}:16:9: error[invalid]") and "(first on line 11)" in line


def test_a_pattern_is_quoted_as_written_not_lower_cased(tmp_path):
    problems = validate(cluster(tmp_path, bids=[dict(id="'Bad Id'", vendor="A", gpus=8,
                                                     pricing="{usd_per_gpu_hour: 2.0}")]))
    (problem,) = problems
    assert "'Bad Id'" in problem and "`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`" in problem
    assert "a-za-z" not in problem


@pytest.mark.parametrize("field", ["gpus", "precision"])
def test_a_huge_value_is_not_echoed_in_full(tmp_path, field):
    huge = "x" * 200_000
    if field == "gpus":
        path = cluster(tmp_path, bids=[dict(id="a", vendor="A", gpus=huge, pricing="{usd_per_gpu_hour: 2.0}")])
    else:
        path = cluster(tmp_path, precision=huge)
    (problem,) = validate(path)
    assert len(problem) < 400 and "200,000 characters" in problem


def test_rules_of_purchases_and_dates_come_in_the_same_pass(tmp_path):
    path = cluster(tmp_path, precision="bf32", bids=[
        dict(id="own", vendor="A", gpus=8, pricing="{kind: purchase, capex_per_gpu: 30000, life_years: 5}"),
        dict(id="bad", vendor="B", gpus=8, pricing="{kind: purchase, usd_per_gpu_hour: 2.0}"),
    ])
    path.write_text(path.read_text(encoding="utf-8").replace("  precision: bf32\n",
                                                            "  precision: bf32\n  deadline: 2026-06-01\n"),
                    encoding="utf-8")
    problems = "\n".join(validate(path))
    assert "`workload.precision` is 'bf32'" in problems
    assert "workload.deadline 2026-06-01 is not after as_of 2026-12-01" in problems
    assert "a purchase is priced by `capex_per_gpu`" in problems
    assert "bids[0]" not in problems and problems.count("error[") == 4   # the inline purchase is valid
