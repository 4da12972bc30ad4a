"""The dask path (procure[scale]) gives the same result as in-process.

The cluster is a LocalCluster of 2 workers with processes=False (threads in this process):
starting worker processes costs seconds on a 2-core machine and tests the same code.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from procure.errors import ProcureError
from procure.measure import ingest
from shared_root import SHARED

pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword:Warning")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
SHARED_LOGS = SHARED / "data" / "logs"


@pytest.fixture(scope="module")
def scheduler():
    pytest.importorskip("dask.dataframe", reason="dask is not installed (pip install procure[scale])")
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def comparable(result) -> dict:
    data = result.to_dict()
    for source in data["sources"]:
        # the first note names the engine; everything else must be identical
        source["notes"] = [n.split(", summarised")[0] for n in source["notes"]]
    return data


def generated(tmp_path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(11)
    step = np.repeat(np.arange(1, 41), 32)
    rank = np.tile(np.arange(32), 40)
    seconds = 3.0 * rng.lognormal(0.0, 0.03, step.size)
    seconds[rank == 17] *= 1.15
    order = rng.permutation(step.size)
    table = pa.table({"step": step[order], "rank": rank[order], "step_time_s": seconds[order]})
    table = pa.concat_tables([table, table.slice(0, 50)])        # duplicated rows
    path = tmp_path / "ranks.parquet"
    pq.write_table(table, path, row_group_size=300)              # several partitions
    return path


@pytest.mark.parametrize("name", ["rank_steps_ms.csv", "rank_spans.csv", "trace-ops.csv", "rank_burnin_2048.csv"])
def test_fixture_tables_match_in_process(scheduler, name):
    path = FIXTURES / name
    assert comparable(ingest([path], scheduler=scheduler)) == comparable(ingest([path]))


def test_partitioned_parquet_matches_in_process(scheduler, tmp_path):
    path = generated(tmp_path)
    on_dask = ingest([path], scheduler=scheduler)
    assert comparable(on_dask) == comparable(ingest([path]))
    source = on_dask.sources[0]
    assert source.stragglers["straggler_ranks"] == [17]
    assert any("dask" in n for n in source.notes)
    assert any("50 duplicate" in n for n in source.notes)


def test_shared_op_trace_matches_in_process(scheduler):
    path = SHARED_LOGS / "perrank_1_bytedance_stragglers_trace-AR.parquet"
    if not path.is_file():
        pytest.skip("../shared is absent")
    on_dask = ingest([path], scheduler=scheduler)
    assert comparable(on_dask) == comparable(ingest([path]))
    assert on_dask.sources[0].stragglers["straggler_ranks"] == [0]


def test_missing_dask_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "dask.dataframe", None)
    path = FIXTURES / "rank_steps_ms.csv"
    with pytest.raises(ProcureError, match=r"pip install procure\[scale\]") as info:
        ingest([path], scheduler="local")
    assert info.value.exit_code == 1
