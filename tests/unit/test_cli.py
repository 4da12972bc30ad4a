"""The command line: exit codes 0/1/2/3 (product.md), JSON output, --quiet, NO_COLOR, completion,
help, catalog, diff. Mostly click's CliRunner; a few real `procure` processes where the process
boundary matters (stderr, exit status, environment)."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

import procure.api
from procure.cli import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "cluster.yaml"
FOUR_PROBLEMS = REPO / "tests" / "errors" / "four_problems.yaml"
QUOTE_SAMPLE = REPO / "tests" / "fixtures" / "quote_sample.json"
DIAGNOSTIC = re.compile(r"^.+:\d+:\d+: error\[[a-z0-9-]+\]: .+$")

# A small RFQ so that quote/estimate stay fast: 8B model, 64 GPUs, inline prices (never price-missing).
# `too-good` commits a step time far below the physical floor (8B x 6 x 1M tokens at 100% of 64 H100
# peaks is about 0.76 s), so it must carry the `impossible` flag.
SMALL = """\
schema: procure/v1
title: Small CLI test RFQ
as_of: 2026-12-01
workload:
  model: llama3-8b
  seq_len: 4096
  global_batch: 256
  train_tokens: 1e11
  precision: bf16
bids:
  - id: plain
    vendor: Plain Cloud
    accelerator: h100-sxm5-80gb
    gpus: 64
    network: ib-ndr400
    pricing: {kind: rental, usd_per_gpu_hour: 2.50}
  - id: too-good
    vendor: Too Good Cloud
    accelerator: h100-sxm5-80gb
    gpus: 64
    network: ib-ndr400
    pricing: {kind: rental, usd_per_gpu_hour: 2.00}
    committed: {step_time_s: 0.01}
"""
SMALL_SLUG = "small-cli-test-rfq"

MEGATRON_LOG = "".join(
    f" iteration {i:8d}/     100 | consumed samples: {i * 256:12d} | elapsed time per iteration (ms): "
    f"{2500.0 if i == 1 else 1000.0 + (i % 3):.1f} | learning rate: 1.000E-04 | global batch size:   256 | "
    f"lm loss: 7.0E+00 | loss scale: 1.0 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
    for i in range(1, 31))

RUNS = """\
schema: procure.published-runs/v1
runs:
  - id: narayanan2021_table1_1.7B
    source: "Narayanan et al.: Table 1"
    tier: A
    model: {layers: 24, hidden: 2304, heads: 24, kv_heads: 24, ffn_hidden: 9216, vocab: 51200, seq_len: 2048, gated_mlp: false}
    hardware: {accelerator: a100-sxm4-80gb, gpus: 32, gpus_per_node: 8, scale_out_gbps_per_gpu: 200}
    parallelism: {tp: 1, pp: 1, dp: 32, cp: 1, ep: 1, vpp: 1, micro_batch: 16, global_batch: 512, zero_stage: 0, recompute: full, sequence_parallel: false}
    precision: fp16
    measured: {step_time_s: 3.528, step_time_derived: true}
    assumed: []
  - id: unknown-part
    source: "made up for the test"
    tier: B
    model: {layers: 24, hidden: 2304, heads: 24, kv_heads: 24, ffn_hidden: 9216, vocab: 51200, seq_len: 2048, gated_mlp: false}
    hardware: {accelerator: no-such-gpu-99gb, gpus: 32, gpus_per_node: 8, scale_out_gbps_per_gpu: 200}
    parallelism: {tp: 1, pp: 1, dp: 32, cp: 1, ep: 1, vpp: 1, micro_batch: 16, global_batch: 512, zero_stage: 0, recompute: full, sequence_parallel: false}
    precision: fp16
    measured: {step_time_s: 3.5, step_time_derived: false}
    assumed: []
"""


def run(*args: str, env: dict | None = None):
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.fixture
def small(tmp_path) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(SMALL, encoding="utf-8")
    return path


def procure_cmd() -> list[str]:
    script = Path(sys.executable).with_name("procure")
    if script.is_file():
        return [str(script)]
    found = shutil.which("procure")
    return [found] if found else [sys.executable, "-m", "procure.cli"]


def real(*args: str, env_extra: dict | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env.update(env_extra or {})
    return subprocess.run(procure_cmd() + list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


# ---------------------------------------------------------------------------------------------
# exit code 0 and 1


def test_validate_ok_is_exit_0():
    result = run("validate", str(EXAMPLE))
    assert result.exit_code == 0, result.output
    assert result.stdout == f"{EXAMPLE}: ok\n"


def test_validate_bad_input_is_exit_1_with_one_line_per_problem():
    result = run("validate", str(FOUR_PROBLEMS))
    assert result.exit_code == 1
    assert result.stdout == ""
    problems = lines(result.stderr)
    assert len(problems) == 4 and all(DIAGNOSTIC.match(p) for p in problems), problems
    assert "Traceback" not in result.output


def test_missing_file_is_exit_1():
    result = run("validate", "no-such-cluster.yaml")
    assert result.exit_code == 1
    assert lines(result.stderr) == ["no-such-cluster.yaml:1:1: error[not-found]: no such file: no-such-cluster.yaml"]


def test_quote_of_bad_input_is_exit_1_and_writes_nothing(tmp_path):
    out = tmp_path / "out"
    result = run("quote", str(FOUR_PROBLEMS), "-o", str(out))
    assert result.exit_code == 1
    assert len(lines(result.stderr)) == 4
    assert not out.exists() or not any(out.iterdir())


def test_quote_with_a_missing_templates_folder_is_exit_1_and_writes_nothing(tmp_path, small):
    out = tmp_path / "out"
    result = run("quote", str(small), "-o", str(out), "--format", "json", "--templates", str(tmp_path / "nope"))
    assert result.exit_code == 1
    assert "error[not-found]" in result.stderr
    assert not out.exists() or not any(out.iterdir())


def test_measured_log_outside_the_cluster_folder_needs_allow_path(tmp_path):
    project, logs = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    logs.mkdir()
    (logs / "burnin.log").write_text(MEGATRON_LOG, encoding="utf-8")
    cluster = project / "cluster.yaml"
    cluster.write_text(SMALL.replace("    committed: {step_time_s: 0.01}\n",
                                     "    committed: {step_time_s: 0.01}\n    measured: [../elsewhere/burnin.log]\n"),
                       encoding="utf-8")
    refused = run("validate", str(cluster))
    assert refused.exit_code == 1
    assert "error[path-not-allowed]" in refused.stderr and "--allow-path" in refused.stderr
    allowed = run("validate", str(cluster), "--allow-path", str(logs))
    assert allowed.exit_code == 0, allowed.output


# ---------------------------------------------------------------------------------------------
# quote: reports, --fail-on (exit 2), existing files


def _quote_json(out: Path) -> dict:
    return json.loads((out / f"{SMALL_SLUG}.json").read_text(encoding="utf-8"))


def test_quote_writes_the_json_report_with_the_contract_fields(tmp_path, small):
    out = tmp_path / "out"
    result = run("quote", str(small), "-o", str(out), "--format", "json")
    assert result.exit_code == 0, result.output
    assert f"wrote {out / (SMALL_SLUG + '.json')}" in result.stdout
    doc = _quote_json(out)
    assert doc["schema"] == "procure.quote/v2"
    assert [bid["id"] for bid in doc["bids"]] == ["plain", "too-good"]
    for bid in doc["bids"]:
        for key in ("step_time_s", "step_time_terms", "tokens_per_s", "mfu", "time_to_train_days", "total_cost",
                    "currency", "cost_per_million_tokens", "flags"):
            assert key in bid, key
    assert sorted(p.name for p in out.iterdir()) == [".procure-manifest", f"{SMALL_SLUG}.json"]


def test_fail_on_tripped_is_exit_2_with_the_reports_written(tmp_path, small):
    out = tmp_path / "out"
    result = run("quote", str(small), "-o", str(out), "--format", "json", "--fail-on", "impossible")
    assert result.exit_code == 2, result.output
    assert "too-good" in result.stderr and "impossible" in result.stderr
    assert "Traceback" not in result.output
    flags = {bid["id"]: [f["code"] for f in bid["flags"]] for bid in _quote_json(out)["bids"]}
    assert "impossible" in flags["too-good"] and "impossible" not in flags["plain"]


def test_fail_on_a_flag_no_bid_carries_is_exit_0(tmp_path, small):
    result = run("quote", str(small), "-o", str(tmp_path / "out"), "--format", "json", "--fail-on", "price-missing")
    assert result.exit_code == 0, result.output


def test_quote_refuses_to_overwrite_without_force(tmp_path, small):
    out = tmp_path / "out"
    assert run("quote", str(small), "-o", str(out), "--format", "json").exit_code == 0
    report = out / f"{SMALL_SLUG}.json"
    report.write_text("an earlier report\n", encoding="utf-8")
    refused = run("quote", str(small), "-o", str(out), "--format", "json")
    assert refused.exit_code == 1
    assert "error[exists]" in refused.stderr and "--force" in refused.stderr
    assert report.read_text(encoding="utf-8") == "an earlier report\n"
    forced = run("quote", str(small), "-o", str(out), "--format", "json", "--force")
    assert forced.exit_code == 0, forced.output
    assert json.loads(report.read_text(encoding="utf-8"))["schema"] == "procure.quote/v2"


def test_render_refuses_to_overwrite_without_force_and_reproduces_the_saved_json(tmp_path):
    out = tmp_path / "out"
    first = run("render", str(QUOTE_SAMPLE), "-o", str(out), "--format", "json")
    assert first.exit_code == 0, first.output
    (written,) = (p for p in out.iterdir() if p.name != ".procure-manifest")
    assert written.read_bytes() == QUOTE_SAMPLE.read_bytes()     # re-rendered, not recomputed
    written.write_text("mine\n", encoding="utf-8")
    again = run("render", str(QUOTE_SAMPLE), "-o", str(out), "--format", "json")
    assert again.exit_code == 1 and "error[exists]" in again.stderr
    assert written.read_text(encoding="utf-8") == "mine\n"
    assert run("render", str(QUOTE_SAMPLE), "-o", str(out), "--format", "json", "--force").exit_code == 0
    assert written.read_bytes() == QUOTE_SAMPLE.read_bytes()


# ---------------------------------------------------------------------------------------------
# unknown option values: one line, a suggestion


def test_unknown_quote_format_is_one_line_with_a_suggestion(tmp_path):
    result = run("quote", str(EXAMPLE), "-o", str(tmp_path / "out"), "--format", "pdff")
    assert result.exit_code == 1
    assert len(lines(result.stderr)) == 1 and "did you mean 'pdf'" in result.stderr
    assert not (tmp_path / "out").exists()


def test_unknown_fail_on_flag_is_one_line_with_a_suggestion(tmp_path):
    result = run("quote", str(EXAMPLE), "-o", str(tmp_path / "out"), "--fail-on", "impossibel")
    assert result.exit_code == 1
    assert len(lines(result.stderr)) == 1 and "did you mean 'impossible'" in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("args", [["validate", str(EXAMPLE)], ["estimate", str(EXAMPLE)], ["catalog", "list"],
                                  ["diff", str(QUOTE_SAMPLE), str(QUOTE_SAMPLE)]],
                         ids=["validate", "estimate", "catalog", "diff"])
def test_unknown_output_format_of_other_commands_is_one_line_bad_input_with_a_suggestion(args):
    # product.md: a bad value is bad input (exit 1); exit 2 means "--fail-on tripped".
    result = run(*args, "--format", "jsno")
    assert result.exit_code == 1, result.output
    assert len(lines(result.stderr)) == 1, result.stderr
    assert "'json'" in result.stderr and "jsno" in result.stderr


# ---------------------------------------------------------------------------------------------
# exit code 3: internal errors


def _boom(*_args, **_kwargs):
    raise RuntimeError("boom")


def test_internal_error_is_exit_3_one_line_without_traceback(monkeypatch):
    monkeypatch.setattr(procure.api, "validate", _boom)
    result = run("validate", str(EXAMPLE))
    assert result.exit_code == 3
    assert lines(result.stderr) == [line for line in lines(result.stderr) if "internal error" in line]
    assert len(lines(result.stderr)) == 1
    assert "RuntimeError: boom" in result.stderr and "--verbose" in result.stderr
    assert "Traceback" not in result.output


def test_internal_error_with_verbose_prints_the_traceback(monkeypatch):
    monkeypatch.setattr(procure.api, "validate", _boom)
    result = run("--verbose", "validate", str(EXAMPLE))
    assert result.exit_code == 3
    assert "Traceback (most recent call last)" in result.stderr and "RuntimeError: boom" in result.stderr


@pytest.mark.parametrize("verbose", [False, True])
def test_internal_error_in_a_real_process(tmp_path, verbose):
    code = ("import procure.api as api\n"
            "def boom(*a, **k):\n    raise RuntimeError('boom')\n"
            "api.validate = boom\n"
            "from procure.cli import main\n"
            f"main({['-v'] if verbose else []!r} + ['validate', 'cluster.yaml'], prog_name='procure')\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 3
    assert result.stdout == ""
    if verbose:
        assert "Traceback" in result.stderr and result.stderr.rstrip().endswith(
            "(this is a bug; rerun with --verbose for details)")
    else:
        assert len(lines(result.stderr)) == 1 and "Traceback" not in result.stderr


# ---------------------------------------------------------------------------------------------
# --format json


def _json(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_validate_json_ok_and_problems():
    ok = _json(run("validate", "--format", "json", str(EXAMPLE)))
    assert ok == {"ok": True, "problems": [], "schema": "procure.validate/v1"}
    bad = run("validate", "--format", "json", str(FOUR_PROBLEMS))
    assert bad.exit_code == 1
    report = json.loads(bad.stdout)
    assert report["schema"] == "procure.validate/v1" and report["ok"] is False
    expected = FOUR_PROBLEMS.with_suffix(".expected").read_text(encoding="utf-8")     # the text golden
    assert [(p["line"], p["col"], p["code"]) for p in report["problems"]] == [
        (int(m[1]), int(m[2]), m[3]) for m in re.finditer(r"^[^:]+:(\d+):(\d+): error\[([a-z0-9-]+)\]", expected, re.M)]
    assert len(report["problems"]) == 4


def test_catalog_json_list_and_show():
    listing = _json(run("catalog", "list", "--format", "json"))
    assert listing["schema"] == "procure.catalog/v1"
    assert set(listing["entries"]) == {"accelerators", "networks", "models", "price-books"}
    assert "h100-sxm5-80gb" in [row["id"] for row in listing["entries"]["accelerators"]]
    only = _json(run("catalog", "list", "--kind", "networks", "--format", "json"))
    assert list(only["entries"]) == ["networks"]
    shown = _json(run("catalog", "show", "h100-sxm5-80gb", "--format", "json"))
    assert shown["schema"] == "procure.catalog/v1" and shown["kind"] == "accelerator"
    assert shown["entry"]["id"] == "h100-sxm5-80gb" and shown["entry"]["peak_tflops"]["bf16"] == 989.4


def test_estimate_json_follows_the_contract(small):
    result = _json(run("estimate", str(small), "--format", "json"))
    assert result["schema"] == "procure.estimate/v1"
    assert [bid["id"] for bid in result["bids"]] == ["plain", "too-good"]
    bid = result["bids"][0]
    assert bid["feasible"] is True and bid["step_time_s"] > 0
    assert {"tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "zero_stage", "recompute"} <= set(bid["plan"])
    assert bid["plan"]["tp"] * bid["plan"]["pp"] * bid["plan"]["dp"] * bid["plan"]["cp"] == 64
    assert {"compute_s", "tp_comm_s", "dp_comm_exposed_s", "bubble_s", "io_s"} <= set(bid["terms"])
    assert {"plans_evaluated", "feasible", "seconds"} <= set(bid["search"])
    assert "memory_gib" in bid and isinstance(bid["runners_up"], list)
    only = _json(run("estimate", str(small), "--bid", "too-good", "--format", "json"))
    assert [bid["id"] for bid in only["bids"]] == ["too-good"]


def test_estimate_of_an_unknown_bid_is_exit_1(small):
    result = run("estimate", str(small), "--bid", "nope")
    assert result.exit_code == 1
    assert "error[unknown-bid]" in result.stderr and "plain" in result.stderr


def test_backtest_json_follows_the_contract(tmp_path):
    runs = tmp_path / "runs.yaml"
    runs.write_text(RUNS, encoding="utf-8")
    result = _json(run("backtest", str(runs), "--format", "json"))
    assert result["schema"] == "procure.backtest/v1"
    by_id = {r["id"]: r for r in result["runs"]}
    assert sorted(by_id) == ["narayanan2021_table1_1.7B", "unknown-part"]     # none dropped
    known = by_id["narayanan2021_table1_1.7B"]
    assert known["predicted_step_time_s"] > 0 and known["measured_step_time_s"] == 3.528
    assert known["error"] == pytest.approx(known["predicted_step_time_s"] / 3.528 - 1, rel=1e-6)
    assert isinstance(known["terms"], dict) and known["terms"]
    assert by_id["unknown-part"]["predicted_step_time_s"] is None and by_id["unknown-part"]["reason"]
    assert result["mape"] == pytest.approx(abs(known["error"]), rel=1e-6)


def test_ingest_json_follows_the_contract(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(MEGATRON_LOG, encoding="utf-8")
    result = _json(run("ingest", str(log), "--format", "json"))
    assert result["schema"] == "procure.ingest/v1"
    (source,) = result["sources"]
    assert source["steps"] >= 25 and source["warmup_excluded"] >= 0
    for key in ("mean", "p50", "p95", "p99", "max"):
        assert 0.9 < source["step_time_s"][key] <= 2.6, key
    assert source["step_time_s"]["p50"] == pytest.approx(1.001, abs=0.002)
    assert "steps_per_sample" in source and source["format"]


def test_diff_json_and_text_report_a_moved_price_and_a_new_ranking(tmp_path):
    old = json.loads(QUOTE_SAMPLE.read_text(encoding="utf-8"), parse_float=Decimal)
    new = copy.deepcopy(old)
    ranking = list(old["ranking"])
    mover = next(bid for bid in new["bids"] if bid["id"] == ranking[-2] and bid.get("cost_per_million_tokens"))
    old_price = mover["cost_per_million_tokens"]
    mover["cost_per_million_tokens"] = Decimal("0.25")
    new["ranking"] = [mover["id"]] + [bid for bid in ranking if bid != mover["id"]]
    (tmp_path / "old.json").write_bytes(QUOTE_SAMPLE.read_bytes())
    (tmp_path / "new.json").write_bytes(_dump_decimal(new))
    result = _json(run("diff", str(tmp_path / "old.json"), str(tmp_path / "new.json"), "--format", "json"))
    assert result["schema"] == "procure.diff/v2"
    assert result["added"] == [] and result["removed"] == []
    assert result["old"]["file"] == str(tmp_path / "old.json") and result["new"]["file"] == str(tmp_path / "new.json")
    (changed,) = result["changed"]
    assert changed["id"] == mover["id"] and changed["inputs"] == []
    (move,) = [c for c in changed["results"] if c["field"] == "cost_per_million_tokens"]
    assert Decimal(str(move["old"])) == old_price and Decimal(str(move["new"])) == Decimal("0.25")
    assert Decimal(str(move["delta"])) == Decimal("0.25") - old_price
    assert result["ranking"]["changed"] is True and result["ranking"]["winner_changed"] is True
    assert result["ranking"]["new"][0] == mover["id"]
    text = run("diff", str(tmp_path / "old.json"), str(tmp_path / "new.json"))
    assert text.exit_code == 0
    assert mover["id"] in text.stdout and "cost per million tokens" in text.stdout and "$0.2500" in text.stdout
    assert "ranking changed" in text.stdout and "new winner" in text.stdout


def _dump_decimal(doc: dict) -> bytes:
    from procure.jsontext import to_json_bytes

    return to_json_bytes(doc)


def test_diff_of_a_file_that_is_not_a_quote_is_exit_1(tmp_path):
    other = tmp_path / "other.json"
    other.write_text('{"schema": "something/v9"}', encoding="utf-8")
    result = run("diff", str(QUOTE_SAMPLE), str(other))
    assert result.exit_code == 1 and "error[bad-schema]" in result.stderr


# ---------------------------------------------------------------------------------------------
# --quiet, NO_COLOR, completion, help, catalog show


def test_quiet_prints_nothing_on_success_but_still_prints_errors():
    assert run("-q", "validate", str(EXAMPLE)).stdout == ""
    assert run("validate", str(EXAMPLE), "-q").stdout == ""          # after the command name too
    assert run("-q", "catalog", "list").stdout == ""
    bad = run("-q", "validate", str(FOUR_PROBLEMS))
    assert bad.exit_code == 1 and len(lines(bad.stderr)) == 4


def test_quiet_quote_writes_the_reports_silently(tmp_path, small):
    result = run("-q", "quote", str(small), "-o", str(tmp_path / "out"), "--format", "json")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert (tmp_path / "out" / f"{SMALL_SLUG}.json").is_file()


_SGR = re.compile(r"\x1b\[([0-9;]*)m")


def _has_colour(text: str) -> bool:
    """True if an ANSI SGR sequence sets a foreground or background colour (bold alone is not colour)."""
    for match in _SGR.finditer(text):
        for part in filter(None, match.group(1).split(";")):
            value = int(part)
            if 30 <= value <= 38 or 40 <= value <= 48 or 90 <= value <= 107:
                return True
    return False


def test_no_color_is_honoured():
    coloured = real("catalog", "show", "ib-ndr400", env_extra={"FORCE_COLOR": "1"})
    assert coloured.returncode == 0 and _has_colour(coloured.stdout)          # the control: colours are on
    plain = real("catalog", "show", "ib-ndr400", env_extra={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert plain.returncode == 0 and "ib-ndr400" in plain.stdout
    assert not _has_colour(plain.stdout + plain.stderr)


def test_completion_prints_a_script_that_completes_commands():
    bash = real("completion", "bash")
    assert bash.returncode == 0
    assert "_PROCURE_COMPLETE=bash_complete" in bash.stdout and "complete -o" in bash.stdout
    assert "#compdef procure" in real("completion", "zsh").stdout
    completed = real(env_extra={"_PROCURE_COMPLETE": "bash_complete", "COMP_WORDS": "procure val", "COMP_CWORD": "1"})
    assert "validate" in completed.stdout


def test_help_lists_every_command():
    result = real("--help")
    assert result.returncode == 0
    listed = set(re.findall(r"^\s{2}([a-z]+)\s", result.stdout.split("Commands:", 1)[1], flags=re.M))
    assert listed == set(main.commands)
    assert "Exit codes" in result.stdout


def test_version():
    result = run("--version")
    assert result.exit_code == 0 and re.search(r"\d+\.\d+\.\d+", result.stdout)


def test_catalog_show_an_accelerator():
    result = run("catalog", "show", "h100-sxm5-80gb")
    assert result.exit_code == 0, result.output
    assert "h100-sxm5-80gb" in result.stdout and "H100 SXM5 80GB" in result.stdout and "989.4" in result.stdout


def test_catalog_show_an_unknown_id_suggests_the_nearest():
    result = run("catalog", "show", "h100-sxm5")
    assert result.exit_code == 1
    assert len(lines(result.stderr)) == 1 and "did you mean 'h100-sxm5-80gb'" in result.stderr
