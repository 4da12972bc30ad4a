"""Broken published-runs files and vTrain CSVs are file:line:col diagnostics, never tracebacks."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from procure.backtest import read_vtrain_csv
from procure.backtest.published_run import RunSoftware
from procure.errors import InputError
from procure.backtest.files import load_runs_file
from procure.backtest.runs import read_runs

GOOD = """\
schema: procure.published-runs/v1
runs:
- id: run_a
  source: "a paper, table 1"
  url: "https://example.org/a"
  source_family: paper-a
  split: fit
  family: dense-bf16-hopper
  software: {stack: nemo, version: 24.09, date: 2024-09}
  tier: A
  tuned_recipe: true
  model: {layers: 32, hidden: 4096, heads: 32, kv_heads: 8, ffn_hidden: 14336, vocab: 128256,
          seq_len: 8192, gated_mlp: true, head_dim: 128}
  hardware: {accelerator: h100-sxm5-80gb, gpus: 8, gpus_per_node: 8, scale_out_gbps_per_gpu: 400}
  parallelism: {tp: 1, pp: 1, dp: 8, cp: 1, ep: 1, etp: 1, vpp: 1, micro_batch: 1, global_batch: 128,
                zero_stage: 1, recompute: none, sequence_parallel: false, tp_comm_overlap: false,
                fsdp: false}
  precision: bf16
  measured: {step_time_s: 12.5, step_time_derived: false, how: "mean of steps 10-50",
             tokens_per_s_per_gpu: 10485.0, peak_memory_gib: 61.2}
  assumed: [micro_batch]
  notes: "ok"
"""


def _write(tmp_path, text, name="runs.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_good_file_reads_with_its_extended_fields(tmp_path):
    (run,) = read_runs(_write(tmp_path, GOOD))
    assert run.software == RunSoftware(stack="nemo", version="24.09", date="2024-09")
    assert run.model.head_dim == 128 and run.measured.peak_memory_gib == 61.2
    assert run.split == "fit" and run.family == "dense-bf16-hopper"


def test_a_run_read_is_a_frozen_record_with_the_schema_defaults(tmp_path):
    """Readers take attributes, never keys: a field left out is its default (None where the schema
    has none), and nothing downstream can change a run in place."""
    (run,) = read_runs(_write(tmp_path, GOOD))
    assert run.finetune is None and run.router is None and run.group is None
    assert run.parallelism.pipeline_flushes == 1 and run.model.mtp_layers == 0
    with pytest.raises(ValidationError):
        run.parallelism.tp = 2


BROKEN = [
    ("no hardware", lambda t: t.replace(
        "  hardware: {accelerator: h100-sxm5-80gb, gpus: 8, gpus_per_node: 8, scale_out_gbps_per_gpu: 400}\n",
        ""), "missing-field", "hardware"),
    ("string gpus", lambda t: t.replace("gpus: 8,", "gpus: eight,"), "bad-type", "gpus"),
    ("string step time", lambda t: t.replace("step_time_s: 12.5", "step_time_s: fast"), "bad-type", "step_time_s"),
    ("negative step time", lambda t: t.replace("step_time_s: 12.5", "step_time_s: -1"), "out-of-range", "step_time_s"),
    ("zero tp", lambda t: t.replace("tp: 1,", "tp: 0,"), "out-of-range", "tp"),
    ("bad recompute", lambda t: t.replace("recompute: none", "recompute: partial"), "bad-value", "recompute"),
    ("bad precision", lambda t: t.replace("precision: bf16", "precision: int4"), "bad-value", "precision"),
    ("bad split", lambda t: t.replace("split: fit", "split: test"), "bad-value", "split"),
    ("bad family", lambda t: t.replace("family: dense-bf16-hopper", "family: hopper"), "bad-value", "family"),
    ("bad stack", lambda t: t.replace("stack: nemo", "stack: nemoo"), "bad-value", "stack"),
    ("unknown key", lambda t: t.replace("  tier: A\n", "  tier: A\n  teir: B\n"), "unknown-key", "teir"),
    ("bad tier", lambda t: t.replace("tier: A", "tier: C"), "bad-value", "tier"),
    ("wrong schema", lambda t: t.replace("published-runs/v1", "published-runs/v9"), "bad-value", "schema"),
    ("float layers", lambda t: t.replace("layers: 32", "layers: 32.5"), "bad-type", "layers"),
    ("bool as zero stage", lambda t: t.replace("zero_stage: 1", "zero_stage: 5"), "bad-value", "zero_stage"),
    ("runs not a list", lambda t: t.split("runs:")[0] + "runs: 3\n", "list-type", "runs"),
    ("bad id", lambda t: t.replace("id: run_a", "id: 'run a/b'"), "bad-value", "id"),
    ("bad yaml", lambda t: t.replace("tier: A", "tier: [A"), "yaml-syntax", ""),
]


@pytest.mark.parametrize("name,edit,code,word", BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_runs_files_are_positioned_diagnostics(tmp_path, name, edit, code, word):
    path = _write(tmp_path, edit(GOOD))
    with pytest.raises(InputError) as info:
        load_runs_file(path)
    diags = info.value.diagnostics
    assert diags and all(d.line > 0 and d.col > 0 for d in diags), name
    assert any(d.code == code and word in d.message for d in diags), [d.format() for d in diags]
    assert str(path) in diags[0].format()


def test_duplicate_run_ids_point_at_the_second(tmp_path):
    body = GOOD.split("runs:\n")[1]
    path = _write(tmp_path, GOOD + body)
    with pytest.raises(InputError) as info:
        read_runs(path)
    (diag,) = info.value.diagnostics
    assert diag.code == "duplicate-id" and diag.line > 20


def test_the_shipped_hold_out_file_validates():
    from pathlib import Path

    runs = read_runs(Path(__file__).resolve().parents[2] / "benchmarks" / "holdout_runs.yaml")
    assert len(runs) >= 6


CSV_HEADER = ("# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,"
              "tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms)\n")
CSV_ROW = "8,32,4,1024,16,24,1024,2,2,2,219.73\n"

BAD_ROWS = [
    ("too few cells", "8,32,4,1024,16,24,1024,2,2,219.73\n", 1),
    ("too many cells", "8,32,4,1024,16,24,1024,2,2,2,2,219.73\n", 1),
    ("a word", "8,32,four,1024,16,24,1024,2,2,2,219.73\n", 6),
    ("zero gpus", "0,32,4,1024,16,24,1024,2,2,2,219.73\n", 1),
    ("negative time", "8,32,4,1024,16,24,1024,2,2,2,-5\n", 30),
    ("fractional tp", "8,32,4,1024,16,24,1024,2.5,2,2,219.73\n", 24),
    ("nan", "8,32,4,1024,16,24,1024,2,2,2,nan\n", 30),
    ("inf", "8,32,4,inf,16,24,1024,2,2,2,219.73\n", 8),
    ("empty cell", "8,32,4,,16,24,1024,2,2,2,219.73\n", 8),
    ("fractional layers", "8,32,4,1024,16,24.5,1024,2,2,2,219.73\n", 16),
]


@pytest.mark.parametrize("name,row,col", BAD_ROWS, ids=[b[0] for b in BAD_ROWS])
def test_bad_vtrain_rows_are_line_and_column_diagnostics(name, row, col):
    with pytest.raises(InputError) as info:
        read_vtrain_csv(CSV_HEADER + CSV_ROW + row, multi=False, source="v.csv")
    (diag,) = info.value.diagnostics
    assert (diag.source, diag.line, diag.col) == ("v.csv", 3, col), diag.format()


def test_a_vtrain_row_outside_the_run_schema_is_refused_at_its_line():
    """A row is validated as any published run: a tensor-parallel degree above the schema's 1,024
    names the field, at the row's line."""
    row = "8,32,4,1024,16,24,1024,2048,2,2,219.73\n"
    with pytest.raises(InputError) as info:
        read_vtrain_csv(CSV_HEADER + CSV_ROW + row + CSV_ROW, multi=False, source="v.csv")
    (diag,) = info.value.diagnostics
    assert (diag.source, diag.line, diag.code) == ("v.csv", 3, "bad-value")
    assert "parallelism.tp" in diag.message and "1024" in diag.message, diag.format()


def test_every_bad_vtrain_row_is_reported_at_once():
    text = CSV_HEADER + "".join(row for _, row, _ in BAD_ROWS[:4]) + CSV_ROW
    with pytest.raises(InputError) as info:
        read_vtrain_csv(text, multi=False, source="v.csv")
    assert [d.line for d in info.value.diagnostics] == [2, 3, 4, 5]


def test_a_vtrain_header_of_the_wrong_width_is_refused(tmp_path):
    path = _write(tmp_path, "a,b,c\n1,2,3\n", "ground_truth_single.csv")
    with pytest.raises(InputError) as info:
        load_runs_file(path)
    assert info.value.diagnostics[0].code == "bad-header"
