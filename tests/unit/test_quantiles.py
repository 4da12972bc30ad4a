"""procure.measure.quantiles equals numpy's median and percentile bit for bit, and never imports
numpy.ma (issue 16: about 20 ms of every `procure ingest`)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from procure.measure.quantiles import column_sums_whole_us, median, percentiles, row_medians
from procure.measure.ranktable import whole_us

FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)
QS = st.lists(st.floats(min_value=0.0, max_value=100.0), min_size=1, max_size=6)


def _same(a: float, b: float) -> bool:
    return (np.isnan(a) and np.isnan(b)) or a == b


@settings(max_examples=300, deadline=None)
@given(arrays(np.float64, st.integers(1, 40), elements=FLOATS))
def test_median_is_numpys(values: np.ndarray) -> None:
    with np.errstate(all="ignore"):
        assert _same(median(values), float(np.median(values)))


@settings(max_examples=300, deadline=None)
@given(arrays(np.float64, st.integers(1, 40), elements=FLOATS), QS)
def test_percentiles_are_numpys(values: np.ndarray, qs: list[float]) -> None:
    with np.errstate(all="ignore"):
        mine, theirs = percentiles(values, qs), [float(v) for v in np.percentile(values, qs)]
    assert all(_same(a, b) for a, b in zip(mine, theirs)), (mine, theirs)


def test_row_medians_match_in_blocks_and_threads() -> None:
    rng = np.random.default_rng(3)
    for shape in [(1, 1), (3, 4), (7, 5), (610, 2048), (97, 16384), (2, 300_001)]:
        table = rng.lognormal(0.0, 0.01, shape)
        assert np.array_equal(row_medians(table), np.median(table, axis=1)), shape
        assert np.array_equal(column_sums_whole_us(table), whole_us(table).sum(axis=0)), shape


def test_ingest_of_a_small_log_does_not_import_numpy_ma(tmp_path) -> None:
    log = tmp_path / "steps.csv"
    log.write_text("step,rank,step_time_s\n" + "".join(f"{s},{r},{1.0 + 0.01 * r + 0.001 * s}\n"
                                                        for s in range(1, 40) for r in range(4)))
    code = ("import sys\nfrom procure.measure import ingest\n"
            f"ingest([{str(log)!r}])\nprint('numpy.ma' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
