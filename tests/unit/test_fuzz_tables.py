"""Hostile per-rank tables (CSV, TSV, .csv.gz, Parquet): generated column names, types and values.

Columns take the accepted names (step/rank/duration/span/op-trace schemas, any case) or strangers;
types include uint64 past int64, binary with invalid UTF-8, lists, structs, booleans, timestamps,
dictionaries and nulls; values include NaN, infinities, 10**30, negative and fractional steps.
Every table must end in an IngestResult whose JSON can be written, or a LogError naming the file.
"""

from __future__ import annotations

import datetime as dt
import gzip
import random

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from hypothesis import given, strategies as st

from fuzz_budget import fuzz_settings
from test_fuzz_logs import check

BATCH = 4
NAMES = ["step", "STEP", " iteration ", "rank", "global_rank", "gpu", "step_time_s", "duration_ms", "time_us",
         "elapsed", "dur_ns", "start_s", "end_s", "start", "end", "optype", "op", "start_ts", "duration", "x", "",
         "step", "rank"]


def column(rng: random.Random, rows: int) -> pa.Array:
    kind = rng.choice(["int", "int", "float", "float", "uint64", "text", "binary", "bool", "list", "struct",
                       "timestamp", "dict", "null", "decimal", "int8"])
    if kind == "int":
        return pa.array([rng.choice([rng.randint(-3, 40), rng.randint(-(2 ** 63), 2 ** 63 - 1)]) for _ in range(rows)],
                        pa.int64())
    if kind == "int8":
        return pa.array([rng.randint(-128, 127) for _ in range(rows)], pa.int8())
    if kind == "float":
        return pa.array([rng.choice([rng.uniform(0, 10), float("nan"), float("inf"), -1.0, 1e30, 0.5, 5e-324,
                                     None]) for _ in range(rows)], pa.float64())
    if kind == "uint64":
        return pa.array([rng.choice([0, 1, 2 ** 63, 2 ** 64 - 1, rng.randint(0, 50)]) for _ in range(rows)], pa.uint64())
    if kind == "text":
        return pa.array([rng.choice(["1", " 2.5 ", "x", "", "1e999", "9" * 400, "-0", "NaN", "١٢", None, "3,000"])
                         for _ in range(rows)], pa.string())
    if kind == "binary":
        return pa.array([rng.choice([b"1", b"\xff\xfe", b" 7 ", b"", None]) for _ in range(rows)], pa.binary())
    if kind == "bool":
        return pa.array([rng.random() < 0.5 for _ in range(rows)], pa.bool_())
    if kind == "list":
        return pa.array([[rng.randint(0, 5)] for _ in range(rows)], pa.list_(pa.int64()))
    if kind == "struct":
        return pa.array([{"a": rng.randint(0, 5)} for _ in range(rows)])
    if kind == "timestamp":
        return pa.array([dt.datetime(2026, 1, 1) + dt.timedelta(seconds=rng.randint(0, 99)) for _ in range(rows)])
    if kind == "dict":
        return pa.array([rng.choice(["1", "2", "x"]) for _ in range(rows)]).dictionary_encode()
    if kind == "decimal":
        return pa.array([rng.randint(0, 99) for _ in range(rows)], pa.decimal128(10, 2))
    return pa.nulls(rows)


def table(rng: random.Random) -> pa.Table:
    rows = rng.choice([0, 1, 2, 5, 20])
    names = rng.sample(NAMES, rng.randint(1, 6))
    if rng.random() < 0.7:     # most tables name a schema procure accepts
        names = rng.choice([["step", "rank", "step_time_s"], ["step", "rank", "start_s", "end_s"],
                            ["step", "rank", "optype", "start_ts", "duration"]]) + names[:1]
    columns, seen = {}, set()
    for name in names:
        if name not in seen:
            seen.add(name)
            columns[name] = column(rng, rows)
    return pa.table(columns)


def write_table(folder, rng: random.Random, data: pa.Table):
    kind = rng.choice(["parquet", "csv", "tsv", "csv.gz", "parquet-garbled"])
    path = folder / f"ranks.{kind.split('-')[0]}"
    if kind.startswith("parquet"):
        pq.write_table(data, path)
        if kind == "parquet-garbled":
            blob = bytearray(path.read_bytes())
            for _ in range(rng.randint(1, 4)):
                blob[rng.randrange(len(blob))] = rng.randrange(256)
            path.write_bytes(bytes(blob))
        return path
    flat = pa.table({name: (col if _csv_ready(col.type) else pa.array([str(v) for v in col.to_pylist()]))
                     for name, col in zip(data.column_names, data.columns)})
    sink = pa.BufferOutputStream()
    pcsv.write_csv(flat, sink, write_options=pcsv.WriteOptions(delimiter="\t" if kind == "tsv" else ","))
    text = sink.getvalue().to_pybytes()
    if rng.random() < 0.3:     # invalid UTF-8, a ragged row, a stray quote
        at = rng.randint(0, len(text))
        text = text[:at] + rng.choice([b"\xff", b'"', b",,,,\n", b"\n1,2\n", b"\r"]) + text[at:]
    path.write_bytes(gzip.compress(text, compresslevel=1) if kind == "csv.gz" else text)
    return path


def _csv_ready(kind: pa.DataType) -> bool:
    return not (pa.types.is_list(kind) or pa.types.is_struct(kind) or pa.types.is_binary(kind)
                or pa.types.is_dictionary(kind))


@fuzz_settings("tables: generated CSV/TSV/csv.gz/Parquet", 120, BATCH)
@given(seed=st.integers(0, 2 ** 64 - 1))
def test_generated_tables_end_in_a_result_or_a_log_error(tmp_path_factory, seed):
    rng = random.Random(seed)
    folder = tmp_path_factory.getbasetemp()
    for _ in range(BATCH):
        path = write_table(folder, rng, table(rng))
        check([path])
        path.unlink()


@pytest.mark.parametrize("kind", ["uint64", "binary", "list", "bool", "timestamp", "struct"])
def test_a_column_of_each_odd_type_is_invalid_rows_not_a_crash(tmp_path, kind):
    good = pa.table({"step": [1, 2, 3], "rank": [0, 0, 0], "step_time_s": [1.0, 1.1, 1.2]})
    odd = {"uint64": pa.array([1, 2, 2 ** 64 - 1], pa.uint64()), "binary": pa.array([b"1", b"\xff", b"3"]),
           "list": pa.array([[1], [2], [3]]), "bool": pa.array([True, False, True]),
           "timestamp": pa.array([dt.datetime(2026, 1, 1)] * 3), "struct": pa.array([{"a": 1}] * 3)}[kind]
    path = tmp_path / "t.parquet"
    pq.write_table(good.set_column(0, "step", odd), path)
    check([path])
    if kind in ("uint64", "binary"):     # the readable rows stay: 2**64-1 and b"\xff" are the invalid ones
        from procure.measure import ingest
        source = ingest([path]).to_dict()["sources"][0]
        assert source["samples"] == 2 and any("1 rows with missing or invalid values" in n for n in source["notes"])
