"""The straggler rule on hand-made per-rank data, its properties, and the per-rank burn-in fixture
named in ingest, the quote JSON and the bid page (HTML and PDF, English and zh-TW)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procure.measure import ranktable
from procure.measure.ranktable import reduce_arrays
from procure.measure.stragglers import analyse

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
BURN_IN = FIXTURES / "rank_burnin_2048.csv"
CASE = Path(__file__).resolve().parents[1] / "cases" / "rank-stragglers" / "cluster.yaml"


def table(times: list[list[float]], ranks: list[int] | None = None) -> dict[str, np.ndarray]:
    """Rows of a steps x ranks grid (steps numbered from 1) as the reduction's arrays."""
    grid = np.asarray(times, dtype=float)
    ids = np.asarray(ranks if ranks is not None else range(grid.shape[1]), dtype=np.int64)
    return {"step": np.repeat(np.arange(1, grid.shape[0] + 1), grid.shape[1]),
            "rank": np.tile(ids, grid.shape[0]), "step_time_s": grid.ravel()}


def named(times: list[list[float]], ranks: list[int] | None = None) -> list[int]:
    section = analyse(reduce_arrays(table(times, ranks)))
    assert section is not None
    return section["straggler_ranks"]


# ---------------------------------------------------------------- the rule by hand

def test_a_rank_slow_in_most_steps_is_named_with_its_figures():
    # 3 ranks, 4 steps; the step median is rank 1's time. Rank 2 is 10% slow in steps 1-3
    # (11/10, 22/20, 11/10) and level in step 4: slow in 3 of 4 steps, slowdown (0.1 * 3 + 0) / 4.
    times = [[10, 10, 11], [20, 20, 22], [10, 10, 11], [10, 10, 10]]
    section = analyse(reduce_arrays(table(times)))
    assert section["straggler_ranks"] == [2] and section["straggler_count"] == 1
    entry = section["stragglers"][0]
    assert (entry["rank"], entry["times_slowest"], entry["slow_steps"], entry["steps"]) == (2, 3, 3, 4)
    assert entry["slowdown"] == pytest.approx(0.075)


def test_uniform_noise_names_no_rank():
    rng = np.random.default_rng(5)
    times = (10.0 * rng.normal(1.0, 0.01, (200, 32))).tolist()
    section = analyse(reduce_arrays(table(times)))
    assert section["straggler_ranks"] == [] and section["stragglers"] == []
    assert max(r["slowdown"] for r in section["slowest_ranks"]) < 0.01


def test_stalls_every_rank_waits_through_do_not_hide_a_slow_rank():
    # rank 3 is 6% slow in 8 of 10 steps; steps 1 and 10 are 300 s stalls in which it is level.
    # Its mean (684.8 s / 10) is only 0.7% above the others' (680 s / 10), yet it is slow in
    # 8 of 10 steps and 4.8% slow on average (0.06 * 8 / 10): named.
    times = [[300.0] * 4] + [[10.0, 10.0, 10.0, 10.6]] * 8 + [[300.0] * 4]
    section = analyse(reduce_arrays(table(times)))
    assert section["straggler_ranks"] == [3]
    top = section["slowest_ranks"][0]
    assert top["vs_median"] == pytest.approx(4.8 / 680)
    assert (top["slow_steps"], top["slowdown"]) == (8, pytest.approx(0.048))


def test_a_rank_slow_now_and_then_by_a_lot_is_named():
    # rank 0 is 30% slow in 1 step of 4: slow in a quarter of its steps, 7.5% slow on average
    times = [[13, 10, 10], [10, 10, 10], [10, 10, 10], [10, 10, 10]]
    assert named(times) == [0]


def test_a_rank_slow_in_a_third_of_its_steps_by_a_little_is_not_named():
    # 6% slow in 1 step of 3: slow in less than half, 2% on average
    assert named([[10.6, 10, 10], [10, 10, 10], [10, 10, 10]]) == []


def test_stragglers_are_listed_slowest_first():
    times = [[10, 10, 10, 11, 12]] * 4
    assert named(times, [7, 3, 9, 5, 1]) == [1, 5]


@pytest.mark.parametrize("ragged", [False, True])
def test_blocks_of_steps_give_the_same_figures(monkeypatch, ragged):
    rng = np.random.default_rng(9)
    arrays = table((rng.lognormal(0.0, 0.05, (50, 7)) * 4.0).tolist())
    if ragged:   # one row fewer: not a grid, so the search-and-scatter path
        arrays = {k: v[1:] for k, v in arrays.items()}
    whole = reduce_arrays(dict(arrays))
    monkeypatch.setattr(ranktable, "_BLOCK_ROWS", 10)
    blocked = reduce_arrays(dict(arrays))
    assert blocked.slow_steps.tolist() == whole.slow_steps.tolist()
    assert blocked.slowdown_ppm.tolist() == whole.slowdown_ppm.tolist()


def test_a_grid_and_a_ragged_table_give_the_same_figures():
    rng = np.random.default_rng(3)
    arrays = table((rng.lognormal(0.0, 0.01, (30, 6)) * 4.0).tolist())
    arrays["step_time_s"][arrays["rank"] == 4] *= 1.07
    per_step = ranktable.reduce_steps(arrays["step"], arrays["rank"], arrays["step_time_s"], arrays["step_time_s"])
    grid = ranktable.grid_slowdowns(per_step, arrays["step_time_s"])
    ragged = ranktable.rank_slowdowns(per_step, arrays["rank"], arrays["step_time_s"], np.arange(6))
    assert grid["slow_steps"].tolist() == ragged["slow_steps"].tolist() and grid["slow_steps"][4] >= 25
    assert grid["slowdown_ppm"].tolist() == ragged["slowdown_ppm"].tolist()


def test_a_step_whose_median_is_zero_slows_no_rank():
    # an op trace step with no compute ops: busy time 0 on most ranks
    slow, ppm = ranktable.step_slowdowns(np.array([0.0, 0.0, 1.0]), np.array([0.0, 0.0, 0.0]))
    assert slow.tolist() == [False, False, False] and ppm.tolist() == [0.0, 0.0, 0.0]


# ---------------------------------------------------------------- properties

grids = st.integers(2, 6).flatmap(lambda n: st.lists(
    st.lists(st.floats(1.0, 2.0, allow_nan=False), min_size=n, max_size=n), min_size=1, max_size=12))


@settings(max_examples=60, deadline=None)
@given(grids, st.randoms(use_true_random=False))
def test_permuting_rank_ids_permutes_the_names(times, rnd):
    width = len(times[0])
    ids = list(range(width))
    relabelled = rnd.sample([11, 23, 37, 41, 53, 67], width)
    before = named(times, ids)
    after = named(times, relabelled)
    assert sorted(after) == sorted(relabelled[i] for i in before)


@settings(max_examples=60, deadline=None)
@given(grids, st.sampled_from([0.5, 2.0, 4.0]))
def test_the_names_do_not_depend_on_the_unit(times, factor):
    # a power of two scales exactly, so every ratio to the step median is the same
    assert named(times) == named((np.asarray(times) * factor).tolist())


# ---------------------------------------------------------------- the per-rank burn-in

def test_ingest_names_rank_1337_of_the_burn_in():
    from procure.measure import ingest

    source = ingest([BURN_IN]).to_dict()["sources"][0]
    strag = source["stragglers"]
    assert (strag["ranks"], strag["steps"]) == (17, 200)
    assert strag["straggler_ranks"] == [1337]
    entry = strag["stragglers"][0]
    assert (entry["rank"], entry["times_slowest"], entry["steps"]) == (1337, 187, 200)
    assert entry["vs_median"] < 0.05 < entry["slowdown"]   # the old mean-of-times rule named none
    assert [o["step"] for o in source["outliers"] if o["step_time_s"] > 30] == [50, 100, 150, 200]


def test_ingest_prints_the_straggler_and_the_outlier_steps():
    from click.testing import CliRunner

    from procure.cli import main

    result = CliRunner().invoke(main, ["ingest", str(BURN_IN)], env={"COLUMNS": "200"}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "1 straggler(s): rank 1337 slowest in 187 of 200 steps" in text
    assert "no stragglers" not in text and "stragglers none" not in text
    assert "12 outlier step(s) flagged (kept): step 14 (12.00 s)" in text and "step 50 (31.53 s)" in text


@pytest.fixture(scope="module")
def quote():
    from procure import api

    return api.quote_document(CASE)


def test_the_quote_json_keeps_the_straggler_and_the_outlier_steps(quote):
    from procure.jsontext import to_json_bytes

    measured = json.loads(to_json_bytes(quote.to_data()))["bids"][0]["measured"]
    assert measured["ranks_compared"] == 17
    assert measured["stragglers"] == [{"source": "rank_burnin_2048.csv", "rank": 1337, "steps": 200,
                                       "times_slowest": 187, "slow_steps": 192, "slowdown": 0.0584388}]
    outliers = measured["outlier_steps"]
    assert len(outliers) == 12 and outliers[2] == {"source": "rank_burnin_2048.csv", "step": 50, "step_time_s": 31.53}


def test_a_v2_document_without_them_still_loads(quote):
    from procure.document import load_quote
    from procure.jsontext import to_json_bytes

    data = json.loads(to_json_bytes(quote.to_data()))
    for key in ("stragglers", "outlier_steps", "ranks_compared"):
        del data["bids"][0]["measured"][key]
    loaded = load_quote(json.dumps(data).encode(), "old.json")
    assert loaded.to_data()["bids"][0]["measured"]["stragglers"] == []


@pytest.mark.parametrize("lang, words", [
    ("en", ["Slow ranks and outlier steps", "1 of the 17 ranks compared held the steps back",
            "<td class=\"num\">1337</td><td class=\"num\">187 of 200</td>", "step 50 (31.5 s)",
            "Committed: 10.5 s mean and 11.5 s P99 per step. Measured: 11.1 s mean and 31.4 s P99."]),
    ("zh-TW", ["慢速 rank 與離群步驟", "在比較的 17 個 rank 中，有 1 個拖慢了步驟",
               "<td class=\"num\">1337</td><td class=\"num\">200 步中的 187 步</td>", "第 50 步（31.5 秒）"]),
])
def test_the_bid_page_names_the_straggler_beside_the_commitment(quote, lang, words):
    from procure.report import render_bytes

    html = render_bytes(quote, ["html"], lang=lang)["html"].decode("utf-8")
    for word in words:
        assert word in html


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="pdftotext (poppler-utils) is not installed")
def test_the_pdf_bid_page_names_the_straggler(quote, tmp_path):
    from procure.report import render_bytes

    path = tmp_path / "r.pdf"
    path.write_bytes(render_bytes(quote, ["pdf"], lang="en")["pdf"])
    text = " ".join(subprocess.run(["pdftotext", "-enc", "UTF-8", str(path), "-"], capture_output=True,
                                   check=True).stdout.decode("utf-8").split())
    assert "1 of the 17 ranks compared held the steps back" in text
    # the table's row, read line by line as laid out (the plain reading order may interleave the
    # page's two columns)
    laid_out = subprocess.run(["pdftotext", "-layout", "-enc", "UTF-8", str(path), "-"], capture_output=True,
                              check=True).stdout.decode("utf-8")
    assert "1337 187 of 200 192 of 200 5.8%" in [" ".join(line.split()) for line in laid_out.splitlines()]
    assert "step 50 (31.5 s)" in text
