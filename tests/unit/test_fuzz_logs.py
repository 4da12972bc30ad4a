"""Hostile logs and traces for `ingest` (and `quote` with `measured:`): every log format, mutated
real fixtures and generated structures, plain and gzip. Each input must end in an IngestResult
whose JSON can be written, or a LogError that names the file: never another exception, a hang
(the per-example deadline) or a NaN in the output.

Mutations start from tests/fixtures/logs: lines deleted, duplicated, swapped, truncated; number
tokens replaced with hostile numbers (4,300+ digits, 1e999, 10**29, NaN, unicode digits); bytes
inserted (invalid UTF-8, NUL, escapes); line endings changed; launcher prefixes added. Generated
structures: Kineto traces, MLPerf MLLOG records, HF Trainer and ms-swift records and nccl-tests
tables with wrong types, huge and nested values in every field.
"""

from __future__ import annotations

import gzip
import json
import math
import random
import re
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from fuzz_budget import fuzz_settings
from procure.measure import LogError, ingest
from procure.measure.detect import FORMATS, detect_format
from procure.jsontext import to_json_bytes

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
TEXT_FORMATS = [f for f in FORMATS if f != "rank-table"]


def _by_format() -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    for path in sorted(FIXTURES.iterdir()):
        fmt = detect_format(path.name, path.read_bytes()[: 1 << 20])
        if fmt in TEXT_FORMATS:
            found.setdefault(fmt, []).append(path)
    return found


FIXTURES_BY_FORMAT = _by_format()

HOSTILE_NUMBERS = ["9" * 5000, "1" + "0" * 400, "1e999", "-1e999", "1e308", "4.9e-324", "1e-320", "nan",
                   "NaN", "inf", "-inf", "0", "-0", "0.0", "-1", "100000000000000000000000000000",
                   "18446744073709551616", "-9223372036854775809", "1,000,000,000,000,000,000,000",
                   "0x10", "1_000", "١٢٣", "²", "１２", "1e", ".", "-", "+", "1/0", "3:00:00:00:00", "99:99",
                   "4 days, 99:99:99", "1e5m", "0.000000000000000000001"]
NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
PIECES = ["\x00", "\x1b[31m", "\r", "\r\n", "\n\n\n", "\t", "\u2028", "\ufeff", "\u00a0", "[rank3]: ",
          "[1,0]<stdout>: ", "0: ", "2026-01-01T00:00:00Z ", "9999-99-99 99:99:99 ", "{", "}", "[", "]", '"',
          "'", ":::MLLOG ", ":::SYSJSON ", "ProfilerStep#", "|", "=", "ms", "/", "...", "[/]", "é" * 20]


def check(paths: list[Path], fmt: str | None = None) -> None:
    """The oracle: a result whose JSON can be written, or a LogError naming a file."""
    try:
        result = ingest(paths, fmt=fmt)
    except LogError as exc:
        message = str(exc)
        assert message.strip(), "a LogError without a message"
        assert any(str(p) in message or p.name in message for p in paths) or "nothing measured" in message, message
        return
    data = result.to_dict()
    to_json_bytes(data)                       # raises on NaN / infinity: a bug upstream
    for source in data["sources"]:
        for value in (source.get("step_time_s") or {}).values():
            assert value is None or (isinstance(value, (int, float)) and math.isfinite(value)), source


# ---------------------------------------------------------------------------------------------
# mutations of the fixtures


def mutate(text: str, rng: random.Random) -> str:
    """1-4 edits of a log's text, chosen by ``rng`` (one drawn seed per example keeps hypothesis cheap)."""
    lines = text.splitlines(keepends=True) or [""]
    for _ in range(rng.randint(1, 4)):
        action = rng.choice(["delete", "duplicate", "swap", "number", "number", "number", "insert", "insert",
                             "truncate", "endings", "repeat"])
        i = rng.randrange(len(lines))
        if action == "delete" and len(lines) > 1:
            del lines[i]
        elif action == "duplicate":
            lines.insert(rng.randint(0, len(lines)), lines[i])
        elif action == "swap" and len(lines) > 1:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif action == "number":
            spans = [m.span() for m in NUMBER.finditer(lines[i])]
            if spans:
                a, b = rng.choice(spans)
                lines[i] = lines[i][:a] + _hostile_number(rng) + lines[i][b:]
        elif action == "insert":
            at = rng.randint(0, len(lines[i]))
            piece = rng.choice(PIECES) if rng.random() < 0.7 else "".join(
                chr(rng.randint(0, 0x2FFF)) for _ in range(rng.randint(1, 8)))
            lines[i] = lines[i][:at] + piece + lines[i][at:]
        elif action == "truncate":
            whole = "".join(lines)
            lines = [whole[: rng.randint(0, len(whole))]]
        elif action == "endings":
            ending = rng.choice(["\r\n", "\r", "\n\r", ""])
            lines = [re.sub(r"\r?\n", ending, line) for line in lines]
        elif action == "repeat":
            lines = lines * rng.randint(2, 5)
    return "".join(lines)


def _hostile_number(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.5:
        return rng.choice(HOSTILE_NUMBERS)
    if kind < 0.75:
        return str(rng.randint(-(10 ** 30), 10 ** 30))
    return repr(rng.choice([rng.uniform(-1e6, 1e6), rng.expovariate(1e-3), 10 ** rng.uniform(-320, 308)]))


def write(folder: Path, name: str, payload: bytes, rng: random.Random) -> Path:
    packed = rng.random() < 0.25
    path = folder / (name + (".gz" if packed else ""))
    path.write_bytes(gzip.compress(payload, compresslevel=1, mtime=0) if packed else payload)
    return path


def to_bytes(text: str, rng: random.Random) -> bytes:
    encoded = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.1:     # one in ten: bytes that are not UTF-8
        at = rng.randint(0, len(encoded))
        encoded = encoded[:at] + rng.randbytes(rng.randint(1, 3)) + encoded[at:]
    return encoded


BATCH = 4   # inputs per hypothesis example: each drawn from the example's seed
MUTATION_SETTINGS = {fmt: fuzz_settings(f"logs: mutated {fmt}", 90, BATCH) for fmt in FIXTURES_BY_FORMAT}


@pytest.mark.parametrize("fmt", sorted(FIXTURES_BY_FORMAT))
def test_mutated_fixtures_of_every_format_end_in_a_result_or_a_log_error(fmt, tmp_path_factory):
    folder = tmp_path_factory.mktemp(fmt)
    texts = [(p.name, p.read_text(encoding="utf-8")) for p in FIXTURES_BY_FORMAT[fmt]]

    @MUTATION_SETTINGS[fmt]
    @given(seed=st.integers(0, 2 ** 64 - 1))
    def run(seed):
        rng = random.Random(seed)
        for _ in range(BATCH):
            name, text = rng.choice(texts)
            path = write(folder, name, to_bytes(mutate(text, rng), rng), rng)
            check([path], rng.choice([None, fmt]))
            path.unlink()

    run()


def test_every_text_format_has_fixtures_to_mutate():
    missing = [fmt for fmt in TEXT_FORMATS if fmt not in FIXTURES_BY_FORMAT]
    assert missing == []


# ---------------------------------------------------------------------------------------------
# generated structures


_FOLDERS: dict[int, Path] = {}


def _folder(factory) -> Path:
    """One scratch folder per session (each example overwrites its file)."""
    if id(factory) not in _FOLDERS:
        _FOLDERS[id(factory)] = factory.mktemp("generated")
    return _FOLDERS[id(factory)]


def _rng(data) -> random.Random:
    return random.Random(data.draw(st.integers(0, 2 ** 32 - 1), label="seed"))


def _bytes(text: str, data) -> bytes:
    return to_bytes(text, _rng(data))


json_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10 ** 40), max_value=10 ** 40),
    st.sampled_from([10 ** 29, 2 ** 63, 2 ** 64, -(2 ** 63) - 1, 10 ** 400]),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.sampled_from(["ProfilerStep#1", "ProfilerStep#99999999999999999999", "ncclKernel_AllReduce_RING",
                     "nccl:all_reduce", "X", "kernel", "cpu_op", "user_annotation", "gpu_user_annotation",
                     "float", "bfloat16", "tracked_stats", "block_start", "block_stop", "run_stop",
                     "global_batch_size", "submission_benchmark", "gpt3", "4x DGX", "10/94", "1m 3s",
                     "0:00:10", "4 days, 7:14:51", "9" * 5000]))
json_values = st.recursive(json_leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)), max_leaves=5)


def fields(keys: list[str]) -> st.SearchStrategy[dict]:
    """A dict of some of ``keys`` (and the odd stranger), every value hostile."""
    return st.dictionaries(st.one_of(st.sampled_from(keys), st.text(max_size=6)), json_values, max_size=len(keys) + 1)


KINETO_EVENT_KEYS = ["name", "ph", "cat", "ts", "dur", "args", "pid", "tid"]
KINETO_ARG_KEYS = ["In msg nelems", "dtype", "Collective name", "Input Dims", "Input type"]
MLLOG_KEYS = ["key", "value", "time_ms", "metadata", "namespace", "event_type"]
MLLOG_META_KEYS = ["step", "epoch_num", "samples_count", "first_epoch_num", "epoch_count", "file", "lineno"]
MLLOG_VALUE_KEYS = ["train_step_timing", "train_step_timing in s", "train_step_time", "throughput", "epoch_num"]


def kineto_event():
    base = st.fixed_dictionaries({}, optional={
        "name": st.one_of(st.sampled_from(["ProfilerStep#1", "ProfilerStep#2", "ncclDevKernel_AllGather",
                                           "nccl:all_reduce", "aten::mm"]), json_values),
        "ph": st.one_of(st.just("X"), json_values), "cat": st.one_of(st.sampled_from(
            ["cpu_op", "kernel", "user_annotation", "gpu_user_annotation"]), json_values),
        "ts": json_values, "dur": json_values,
        "args": st.one_of(fields(KINETO_ARG_KEYS), json_values)})
    return st.one_of(base, json_values)


@fuzz_settings("logs: kineto (strategies)", 60)
@given(data=st.data())
def test_generated_kineto_traces_end_in_a_result_or_a_log_error(tmp_path_factory, data):
    events = data.draw(st.lists(kineto_event(), max_size=8), label="events")
    doc = data.draw(st.one_of(
        st.fixed_dictionaries({"traceEvents": st.just(events)},
                              optional={"distributedInfo": st.one_of(fields(["rank", "world_size"]), json_values),
                                        "schemaVersion": json_values}),
        st.just(events), json_values.map(lambda v: {"traceEvents": v})), label="document")
    text = json.dumps(doc, allow_nan=True)
    if data.draw(st.booleans(), label="damage"):
        cut = data.draw(st.integers(0, len(text)))
        text = text[:cut] + data.draw(st.sampled_from(["", "]", "}", ",", "x", "]]]]", '"traceEvents": ['])) + text[cut:]
    name = data.draw(st.sampled_from(["trace_rank-3.json", "rank99999999999.json", "t.json"]), label="name")
    check([write(_folder(tmp_path_factory), name, _bytes(text, data), _rng(data))], "kineto")


@fuzz_settings("logs: mlperf (strategies)", 60)
@given(data=st.data())
def test_generated_mlperf_records_end_in_a_result_or_a_log_error(tmp_path_factory, data):
    record = st.one_of(
        st.fixed_dictionaries({"key": st.sampled_from(["tracked_stats", "block_start", "block_stop", "run_stop",
                                                       "global_batch_size", "max_sequence_length",
                                                       "submission_benchmark", "submission_platform",
                                                       "train_samples", "trained_samples"])},
                              optional={"value": st.one_of(fields(MLLOG_VALUE_KEYS), json_values),
                                        "time_ms": json_values,
                                        "metadata": st.one_of(fields(MLLOG_META_KEYS), json_values)}),
        json_values)
    lines = [":::MLLOG " + json.dumps(r, allow_nan=True)
             for r in data.draw(st.lists(record, max_size=15), label="records")]
    if data.draw(st.booleans(), label="sysjson"):
        lines.append(":::SYSJSON " + json.dumps(data.draw(st.one_of(
            fields(["number_of_nodes", "accelerators_per_node", "accelerator_model_name", "system_name"]),
            json_values)), allow_nan=True))
    text = "\n".join(lines)
    check([write(_folder(tmp_path_factory), "result_0.txt", _bytes(text, data), _rng(data))], "mlperf")


@fuzz_settings("logs: trainer records (strategies)", 60)
@given(data=st.data())
def test_generated_trainer_records_end_in_a_result_or_a_log_error(tmp_path_factory, data):
    kind = data.draw(st.sampled_from(["state", "results", "jsonl", "swift", "system", "meta"]), label="kind")
    if kind == "state":
        text, fmt = json.dumps(data.draw(st.fixed_dictionaries({"log_history": st.one_of(
            st.lists(fields(["train_runtime", "loss", "step"]), max_size=4), json_values)},
            optional={"global_step": json_values})), allow_nan=True), "hf-trainer"
    elif kind == "results":
        text, fmt = json.dumps(data.draw(fields(["train_runtime", "train_steps_per_second"])),
                               allow_nan=True), "hf-trainer"
    elif kind == "jsonl":
        rows = data.draw(st.lists(fields(["current_steps", "elapsed_time", "loss", "eval_loss", "total_steps"]),
                                  max_size=8))
        text, fmt = "\n".join(json.dumps(r, allow_nan=True) for r in rows), "hf-trainer"
    elif kind == "swift":
        rows = data.draw(st.lists(fields(["global_step/max_steps", "global_step", "train_speed(iter/s)",
                                          "train_speed(s/it)", "elapsed_time", "eval_loss", "loss"]), max_size=8))
        text, fmt = "\n".join(repr(r) for r in rows), "ms-swift"
    elif kind == "system":
        text, fmt = json.dumps(data.draw(st.one_of(fields(
            ["number_of_nodes", "accelerators_per_node", "accelerator_model_name"]), json_values)),
            allow_nan=True), "mlperf-system"
    else:
        pairs = data.draw(st.lists(st.tuples(st.sampled_from(["world_size", "dp_size", "pp_size", "tp_size", "x"]),
                                             st.one_of(st.sampled_from(HOSTILE_NUMBERS), st.text(max_size=8))),
                                   max_size=6))
        text, fmt = "\n".join(f"{k}: {v}" for k, v in pairs), "straggler-meta"
    check([write(_folder(tmp_path_factory), "log.json", _bytes(text, data), _rng(data))], fmt)


@fuzz_settings("logs: nccl-tests (strategies)", 60)
@given(data=st.data())
def test_generated_nccl_tests_tables_end_in_a_result_or_a_log_error(tmp_path_factory, data):
    token = st.one_of(st.sampled_from(HOSTILE_NUMBERS), st.integers(0, 2 ** 40).map(str),
                      st.floats(0, 1e4).map(lambda f: f"{f:.2f}"), st.sampled_from(["N/A", "float", "sum", "-1"]))
    header = data.draw(st.sampled_from([
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error",
        "# size count busbw", "# size count"]), label="header")
    rows = data.draw(st.lists(st.lists(token, min_size=1, max_size=13).map(" ".join), max_size=10), label="rows")
    extra = data.draw(st.lists(st.sampled_from(["# Avg bus bandwidth    : " + n for n in HOSTILE_NUMBERS[:6]]
                                               + ["# Rank  0 Group  0 Pid 1 on host-a device  0",
                                                  "# Rank 99999999999999999999 Group 0 on x",
                                                  "#  nThread 1 nGpus 1 all_reduce_perf"]), max_size=3))
    text = "\n".join(extra[:1] + [header] + rows + extra[1:])
    check([write(_folder(tmp_path_factory), "nccl.txt", _bytes(text, data), _rng(data))], "nccl-tests")


@fuzz_settings("logs: random bytes", 150)
@given(data=st.data())
def test_random_bytes_with_any_name_end_in_a_result_or_a_log_error(tmp_path_factory, data):
    name = data.draw(st.sampled_from(["x.log", "x.json", "x.json.gz", "x.txt", "x.jsonl", "meta-x.yaml", "x.csv",
                                      "x.parquet", "[bold]x[i].log", "x.md"]), label="name")
    blob = data.draw(st.one_of(st.binary(max_size=300), st.text(max_size=300).map(str.encode)), label="blob")
    for pattern in data.draw(st.lists(st.sampled_from([b"PAR1", b"\x1f\x8b", b'"traceEvents":[', b":::MLLOG {",
                                                       b"step,rank,step_time_s\n"]), max_size=2)):
        blob = pattern + blob
    path = _folder(tmp_path_factory) / name
    path.write_bytes(blob)
    forced = data.draw(st.sampled_from([None] + TEXT_FORMATS), label="--log-format")
    check([path], forced)


# ---------------------------------------------------------------------------------------------
# the same structures drawn from a seed: many more of them per second


LEAF_TEXTS = ["ProfilerStep#1", "ProfilerStep#7", "ProfilerStep#99999999999999999999", "ncclKernel_AllReduce_RING",
              "ncclDevKernel_AllGather", "nccl:all_reduce", "rccl:broadcast", "X", "B", "kernel", "cpu_op",
              "user_annotation", "gpu_user_annotation", "float", "bfloat16", "half", "tracked_stats", "block_start",
              "block_stop", "run_stop", "gpt3", "bert", "4x DGX H100", "10/94", "1m 3s", "0:00:10",
              "4 days, 7:14:51", "", "\x00", "\u202e", "é", "9" * 5000]


BIG = "<a JSON integer of 5,000 digits>"    # json.dumps cannot write one (Python's 4,300-digit limit)


def dumps(value) -> str:
    return json.dumps(value, allow_nan=True).replace(json.dumps(BIG), "9" * 5000)


def random_json(rng: random.Random, depth: int = 0):
    kind = rng.random()
    if depth < 3 and kind < 0.12:
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if depth < 3 and kind < 0.22:
        return {rng.choice(["a", "rank", "step", "", "ts"]): random_json(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    leaf = rng.randrange(9)
    return [None, rng.random() < 0.5, rng.randint(-(10 ** 6), 10 ** 6), rng.choice([10 ** 29, 2 ** 63, 2 ** 64, -(2 ** 63) - 1,
            10 ** 400, BIG]), rng.uniform(-1e6, 1e6), rng.choice([float("nan"), float("inf"), -0.0, 1e308, 5e-324]),
            rng.choice(LEAF_TEXTS), "".join(chr(rng.randint(1, 0x2FFF)) for _ in range(rng.randint(0, 6))),
            rng.choice(HOSTILE_NUMBERS)][leaf]


def some(rng: random.Random, keys: list[str], good: dict) -> dict:
    """A record with some of ``keys``: plausible values (``good``) or hostile ones."""
    out = {}
    for key in keys:
        if rng.random() < 0.7:
            out[key] = good[key](rng) if key in good and rng.random() < 0.6 else random_json(rng)
    if rng.random() < 0.1:
        out[rng.choice(["", "x", "\x00"])] = random_json(rng)
    return out


GOOD_EVENT = {"name": lambda r: r.choice(LEAF_TEXTS[:8] + ["aten::mm"]), "ph": lambda r: "X",
              "cat": lambda r: r.choice(["cpu_op", "kernel", "user_annotation", "gpu_user_annotation", "cuda_runtime"]),
              "ts": lambda r: r.uniform(0, 1e7), "dur": lambda r: r.uniform(0, 1e6),
              "args": lambda r: some(r, KINETO_ARG_KEYS, {"In msg nelems": lambda q: q.randint(0, 10 ** 9),
                                                          "dtype": lambda q: q.choice(["float", "bfloat16"])})}


def kineto_text(rng: random.Random) -> str:
    events = [some(rng, KINETO_EVENT_KEYS, GOOD_EVENT) if rng.random() < 0.9 else random_json(rng)
              for _ in range(rng.randint(0, 25))]
    doc = {"traceEvents": events}
    if rng.random() < 0.5:
        doc["distributedInfo"] = some(rng, ["rank", "world_size"], {"rank": lambda r: r.randint(0, 8),
                                                                    "world_size": lambda r: r.randint(1, 8)})
    if rng.random() < 0.1:
        doc = rng.choice([events, {"traceEvents": random_json(rng)}, random_json(rng)])
    return dumps(doc)


def mlperf_text(rng: random.Random) -> str:
    good = {"key": lambda r: r.choice(["tracked_stats", "block_start", "block_stop", "run_stop", "global_batch_size",
                                       "max_sequence_length", "submission_benchmark", "train_samples"]),
            "time_ms": lambda r: r.uniform(0, 1e9),
            "value": lambda r: some(r, MLLOG_VALUE_KEYS, {k: (lambda q: q.uniform(0, 100)) for k in MLLOG_VALUE_KEYS}),
            "metadata": lambda r: some(r, MLLOG_META_KEYS, {k: (lambda q: q.randint(0, 10 ** 6)) for k in MLLOG_META_KEYS})}
    lines = [":::MLLOG " + dumps(some(rng, MLLOG_KEYS, good)) for _ in range(rng.randint(0, 20))]
    if rng.random() < 0.3:
        lines.insert(rng.randint(0, len(lines)), ":::SYSJSON " + dumps(some(
            rng, ["number_of_nodes", "accelerators_per_node", "accelerator_model_name"],
            {"number_of_nodes": lambda r: str(r.randint(1, 64)), "accelerators_per_node": lambda r: "8"})))
    return "\n".join(lines)


def trainer_text(rng: random.Random) -> tuple[str, str]:
    kind = rng.choice(["state", "results", "jsonl", "swift", "stdout"])
    number = {k: (lambda r: r.uniform(0, 1e4)) for k in ["train_runtime", "train_steps_per_second", "loss",
                                                          "current_steps", "total_steps", "global_step"]}
    if kind == "state":
        return dumps({"log_history": [some(rng, ["train_runtime", "loss"], number) for _ in range(rng.randint(0, 4))],
                           "global_step": random_json(rng)}), "hf-trainer"
    if kind == "results":
        return dumps(some(rng, ["train_runtime", "train_steps_per_second"], number)), "hf-trainer"
    if kind == "jsonl":
        return "\n".join(dumps(some(rng, ["current_steps", "elapsed_time", "loss", "total_steps"], dict(
            number, elapsed_time=lambda r: r.choice(["0:00:10", "1:02:03", "4 days, 7:14:51"]))))
            for _ in range(rng.randint(0, 10))), "hf-trainer"
    if kind == "swift":
        return "\n".join(repr(some(rng, ["global_step/max_steps", "train_speed(iter/s)", "elapsed_time", "loss"], {
            "global_step/max_steps": lambda r: f"{r.randint(0, 100)}/100", "train_speed(iter/s)": lambda r: r.uniform(0, 2),
            "elapsed_time": lambda r: "1m 3s"})) for _ in range(rng.randint(0, 10))), "ms-swift"
    return repr(some(rng, ["train_runtime", "train_steps_per_second", "epoch"], number)), "hf-trainer"


def nccl_text(rng: random.Random) -> str:
    header = rng.choice(["#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
                         "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error",
                         "# size count busbw"])
    rows = []
    for _ in range(rng.randint(0, 12)):
        size = rng.choice([str(2 ** rng.randint(0, 40)), rng.choice(HOSTILE_NUMBERS)])
        rest = [f"{rng.uniform(0, 1e4):.2f}" if rng.random() < 0.8 else rng.choice(HOSTILE_NUMBERS)
                for _ in range(rng.randint(0, 12))]
        rows.append(" ".join([size] + rest))
    extra = rng.choice(["#  nThread 1 nGpus 1 all_reduce_perf", "# Rank 99999999999999999999 Group 0 on x",
                        "# Avg bus bandwidth    : " + rng.choice(HOSTILE_NUMBERS), ""])
    return "\n".join([extra, header] + rows)


STRUCTURES = {"kineto": lambda r: (kineto_text(r), "kineto"), "mlperf": lambda r: (mlperf_text(r), "mlperf"),
              "trainer": trainer_text, "nccl-tests": lambda r: (nccl_text(r), "nccl-tests")}


SEEDED_SETTINGS = {kind: fuzz_settings(f"logs: seeded {kind}", 150, BATCH) for kind in STRUCTURES}


@pytest.mark.parametrize("kind", sorted(STRUCTURES))
def test_seeded_structures_end_in_a_result_or_a_log_error(kind, tmp_path_factory):
    folder = tmp_path_factory.mktemp(kind)

    @SEEDED_SETTINGS[kind]
    @given(seed=st.integers(0, 2 ** 64 - 1))
    def run(seed):
        rng = random.Random(seed)
        for _ in range(BATCH):
            text, fmt = STRUCTURES[kind](rng)
            if rng.random() < 0.1:
                cut = rng.randint(0, len(text))
                text = text[:cut] + rng.choice(["", "]", "}", ",", "x", "]]]]", "{" * 50]) + text[cut:]
            path = write(folder, rng.choice(["trace_rank-3.json", "rank99999999999.json", "log.txt"]),
                         to_bytes(text, rng), rng)
            check([path], rng.choice([None, fmt]))
            path.unlink()

    run()
