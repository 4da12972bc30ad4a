"""Every format family on the project's own fixtures (tests/fixtures/logs, hand-written).

Expected values follow from the numbers written into each fixture (see the comments).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from procure.measure import ingest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "logs"


def one(name: str, **kwargs) -> dict:
    result = ingest([FIXTURES / name], **kwargs).to_dict()
    assert len(result["sources"]) == 1
    return result["sources"][0]


def test_megatron_interval_means_restart_and_validation():
    src = one("megatron_lm_interval10.log")
    assert (src["format"], src["variant"], src["aggregation"]) == ("megatron", "megatron-lm",
                                                                   "interval-mean")
    # iterations 10..60 every 10 (log_interval 10 from the argument dump), the validation line
    # is no step, the restart repeats 40 (2300 ms kept over 2050 ms) and 50
    assert (src["samples"], src["steps"], src["steps_per_sample"]) == (6, 60, 10)
    assert src["warmup_excluded"] == 1                      # 3000 ms, the first 10 iterations
    st = src["step_time_s"]
    assert st["mean"] == pytest.approx((2.0 + 2.1 + 2.3 + 1.95 + 2.0) / 5)
    assert st["p50"] == pytest.approx(2.0) and st["max"] == pytest.approx(2.3)
    assert src["gpus"] == 16
    assert any("1 skipped iteration" in n for n in src["notes"])
    assert any("understate the tail" in n for n in src["notes"])


def test_megatron_deepspeed_seconds_deduplicates_ranks():
    src = one("megatron_deepspeed_seconds_ranks.log")
    assert src["variant"] == "megatron-deepspeed" and src["aggregation"] == "per-step"
    assert src["samples"] == 5                             # ranks 0 and 7 print every line
    assert src["step_time_s"]["mean"] == pytest.approx(10.05)   # 30 s warm-up excluded
    assert src["gpus"] is None                             # never guessed from throughput ...
    assert any("implies 8 GPUs" in n for n in src["notes"])     # ... only noted


def test_gpt_neox_interval_inferred_from_iterations():
    src = one("gpt_neox.log")
    assert (src["variant"], src["steps_per_sample"], src["samples"]) == ("gpt-neox", 10, 5)
    assert src["step_time_s"]["mean"] == pytest.approx((9.8 + 9.9 + 10.1 + 10.0) / 4)


def test_megatron_deepspeed_key_value_fork():
    src = one("megatron_deepspeed_kv.log")
    assert src["format"] == "megatron" and src["samples"] == 3
    assert src["step_time_s"]["mean"] == pytest.approx((16.0306 + 15.9694) / 2)


def test_nemo2_scientific_throughput_and_lost_bracket():
    src = one("nemo2.log")
    assert (src["variant"], src["samples"], src["warmup_excluded"]) == ("nemo2", 6, 1)
    assert src["step_time_s"]["mean"] == pytest.approx(3.1)
    assert src["step_time_s"]["max"] == pytest.approx(3.2)


def test_nemo1_progress_bar_timing():
    src = one("nemo1_tqdm.log")
    # bar updates 1, 1 (repeated), 2, 3, 4, 2000 (global_step printed as 2e+3): step = bar count
    assert (src["variant"], src["samples"]) == ("nemo1", 5)
    assert src["step_time_s"]["mean"] == pytest.approx((19.8 + 19.9 + 20.1 + 19.95) / 4)


def test_nemo1_progress_bar_elapsed_windows():
    src = one("nemo1_tqdm_elapsed.log")
    # 3 s per step, whole-second elapsed times, windows of >= 60 s (20 steps)
    assert (src["variant"], src["aggregation"], src["steps_per_sample"]) == ("nemo1-tqdm",
                                                                             "interval-mean", 20)
    assert src["step_time_s"]["mean"] == pytest.approx(3.0)


def test_mlperf_per_step_timing_with_system_description():
    result = ingest([FIXTURES / "mlperf_v3_train_step_timing.txt",
                     FIXTURES / "mlperf_system_dgxh100_n2.json"]).to_dict()
    src, system = result["sources"]
    # 12 per-step values; step index = metadata.step / (4 x 8 tokens); validation timings skipped
    assert (src["samples"], src["warmup_excluded"]) == (12, 1)
    assert src["outliers"] == [{"step": 8, "step_time_s": 16.0}]
    assert src["step_time_s"]["mean"] == pytest.approx(sum([10.0, 10.1, 9.9, 10.0, 10.2, 10.0,
                                                            16.0, 10.1, 10.0, 9.9, 10.0]) / 11)
    assert system["format"] == "mlperf-system" and system["gpus"] == 16
    assert src["gpus"] == 16 and src["accelerator"] == "NVIDIA H100-SXM5-80GB"
    assert any("whole-run throughput" in n for n in src["notes"])


def test_mlperf_alone_states_no_gpu_count():
    assert one("mlperf_v3_train_step_timing.txt")["gpus"] is None


def test_mlperf_raw_submitter_log_with_noise_and_sysjson():
    src = one("mlperf_v41_raw_submitter.txt")
    assert (src["variant"], src["samples"], src["gpus"]) == ("llama2_70b_lora", 5, 16)
    assert src["accelerator"] == "NVIDIA H100 80GB HBM3"
    assert src["step_time_s"]["mean"] == pytest.approx((0.55 + 0.56 + 0.55 + 0.57) / 4)
    assert any("not valid JSON" in n for n in src["notes"])


def test_mlperf_train_step_time_ignores_block_means():
    src = one("mlperf_v5_train_step_time.txt")
    assert src["samples"] == 10                            # not 11: the block mean is no step
    assert [o["step"] for o in src["outliers"]] == [5]     # 67.6 s
    assert any("block means" in n for n in src["notes"])


def test_mlperf_blocks_only_gives_interval_means():
    src = one("mlperf_v4_blocks_only.txt")
    # blocks of 320 tokens = 10 steps of 4 x 8 tokens; durations 150, 100, 101, 99 s
    assert (src["aggregation"], src["samples"], src["steps"], src["steps_per_sample"]) == (
        "interval-mean", 4, 40, 10)
    assert src["warmup_excluded"] == 1
    assert src["step_time_s"]["mean"] == pytest.approx(10.0)


def test_mlperf_block_throughput():
    src = one("mlperf_lora_block_throughput.txt")
    # blocks of 160, 80, 80, 80 samples at 10, 16, 16, 15 samples/s, 8 samples per step
    assert (src["samples"], src["steps"]) == (4, 50)
    assert src["step_time_s"]["mean"] == pytest.approx((0.5 * 10 + 0.5 * 10 + 8 / 15 * 10) / 30)


def test_torchtitan_two_ranks_from_timestamps():
    src = one("torchtitan_2ranks.log")
    # per rank delta t / delta step; per step the slower rank: 2.0, 2.05, 2.1, 2.05 (9, 10,
    # 10, 10 steps); the validation line is no step
    assert (src["aggregation"], src["samples"], src["steps"]) == ("interval-mean", 4, 39)
    assert src["warmup_excluded"] == 1
    assert src["step_time_s"]["mean"] == pytest.approx((2.05 + 2.1 + 2.05) / 3)
    assert src["stragglers"]["ranks"] == 2
    assert src["stragglers"]["slowest_ranks"][0]["rank"] == 1
    assert any("6,789" in n for n in src["notes"])


def test_torchtitan_restart_and_checkpoint_gap():
    src = one("torchtitan_freq1_restart.log")
    # the repeated handler line is ignored, the restart to step 5 starts a new baseline, the
    # checkpoint save makes step 6 take 34 s: flagged, not dropped
    assert (src["aggregation"], src["samples"]) == ("per-step", 7)
    assert src["outliers"] == [{"step": 6, "step_time_s": 34.0}]
    assert src["step_time_s"]["p50"] == pytest.approx(2.025)


def test_deepspeed_current_samples_per_second():
    src = one("deepspeed_throughput.log")
    # 256 / CurrSamplesPerSec; the first print (64 samples/s) is warm-up
    assert (src["variant"], src["samples"], src["warmup_excluded"]) == ("throughput-timer", 5, 1)
    assert src["step_time_s"]["mean"] == pytest.approx((2.0 + 256 / 125 + 256 / 130 + 2.0) / 4)
    assert any("cumulative RunningAvgSamplesPerSec 114.2" in n for n in src["notes"])


def test_deepspeed_wall_clock_breakdown():
    src = one("deepspeed_breakdown.log")
    assert (src["variant"], src["samples"]) == ("wall-clock-breakdown", 4)
    assert src["step_time_s"]["max"] == pytest.approx((3860.70 + 11270.03 + 830.27) / 1000)


def test_llamafactory_jsonl_differences_elapsed_time_across_days():
    src = one("llamafactory_trainer_log.jsonl")
    # 8620 steps in 23:57:00, then 10 steps per row: 100 s, 100 s ("1 day, 0:00:20"),
    # 130 s (an evaluation row in between), 100 s; the duplicate row counts once
    assert (src["format"], src["variant"], src["samples"], src["steps"]) == (
        "hf-trainer", "llamafactory-jsonl", 5, 8660)
    assert src["step_time_s"]["mean"] == pytest.approx(10.75)
    assert src["outliers"] == [{"step": 8650, "step_time_s": 13.0}]


@pytest.mark.parametrize("name, variant", [("trainer_state.json", "trainer-state"),
                                           ("train_results.json", "train-results"),
                                           ("hf_trainer_stdout.log", "trainer-stdout")])
def test_hf_trainer_whole_run(name, variant):
    src = one(name)
    assert (src["variant"], src["aggregation"], src["steps"]) == (variant, "whole-run", 500)
    assert src["step_time_s"]["mean"] == pytest.approx(2.5)
    assert src["warmup_excluded"] == 0


def test_ms_swift_cumulative_speed_differenced():
    src = one("ms_swift.log")
    # elapsed = step / train_speed: 5, 17, 32, 47.5, 62.5 s at steps 1, 5, 10, 15, 20
    assert (src["format"], src["samples"], src["steps"]) == ("ms-swift", 4, 19)
    assert src["step_time_s"]["mean"] == pytest.approx((15.0 + 15.5 + 15.0) / 15, rel=1e-5)


def test_maxtext_drops_compile_and_async_first_steps():
    src = one("maxtext.log")
    assert (src["samples"], src["warmup_excluded"]) == (6, 2)
    assert src["step_time_s"]["mean"] == pytest.approx((5.658 + 5.402 + 5.5 + 5.45) / 4)


@pytest.mark.parametrize("name, mean", [("nanochat.log", (0.99 + 0.98944 + 1.0012 + 0.995) / 4),
                                        ("nanogpt.log", 0.151)])
def test_nanochat_family(name, mean):
    src = one(name)
    assert src["format"] == "nanochat"
    assert src["step_time_s"]["mean"] == pytest.approx(mean)


def test_internevo_timestamps_of_one_run():
    src = one("internevo.log")
    # steps 0, 1, 2 are 4.3 s apart; the comma/NBSP line is from another run (2023)
    assert (src["samples"], src["step_time_s"]["mean"]) == (2, 4.3)
    assert any("fwd_bwd_time" in n for n in src["notes"])


def test_kineto_rank_traces_share_a_straggler_analysis():
    result = ingest([FIXTURES / "kineto_rank-0.json", FIXTURES / "kineto_rank-1.json"])
    d = result.to_dict()
    r0, r1 = d["sources"]
    assert (r0["samples"], r0["gpus"], r0["step_time_s"]["mean"]) == (3, 2, 0.101)
    assert r0["collectives"]["all_reduce"] == {"kernels": 3, "kernel_time_s": 0.006, "calls": 3,
                                              "bytes": 3 * 1048576 * 4}
    assert r0["stragglers"] == r1["stragglers"]
    assert r0["stragglers"]["slowest_ranks"][0]["rank"] == 1
    # combined: the slower rank per step counts once (not both ranks)
    assert d["combined"]["count"] == 3
    assert d["combined"]["max"] == pytest.approx(0.110)


def test_kineto_gzip_and_rocm_duplicate_annotations(tmp_path):
    import gzip

    target = tmp_path / "rank0.json.gz"
    target.write_bytes(gzip.compress((FIXTURES / "rocm_kineto.json").read_bytes()))
    src = ingest([target]).to_dict()["sources"][0]
    assert src["format"] == "kineto"
    assert src["samples"] == 1                             # ProfilerStep#1 once; #2 is empty
    assert src["step_time_s"]["mean"] == pytest.approx(0.009288291)
    assert any("ProfilerStep#2" in n for n in src["notes"])


def test_nccl_tests_new_columns_named_collective():
    src = one("nccl_tests_all_gather.txt")
    bus = src["bus_bandwidth"]
    table = bus["tables"][0]
    assert table["collective"] == "all_gather" and len(table["rows"]) == 5
    assert table["avg_busbw_gbs"] == pytest.approx(105.384)
    # >= 1 GiB rows: mean of out-of-place and in-place (in-place printed as busbw / 1.01)
    expected = sorted((b + round(b / 1.01, 2)) / 2 for b in (143.80, 146.42, 147.09))[1]
    assert bus["large_message_gbs"] == pytest.approx(expected)
    assert src["gpus"] == 4 and src["steps"] == 0 and src["step_time_s"] is None


def test_nccl_tests_old_columns_and_several_tables():
    result = ingest([FIXTURES / "nccl_tests_old_columns.txt"])
    bus = result.to_dict()["sources"][0]["bus_bandwidth"]
    assert [t["collective"] for t in bus["tables"]] == ["all_reduce", "reduce_scatter"]
    assert bus["tables"][0]["rows"][-1]["busbw_inplace_gbs"] == pytest.approx(327.36)
    assert result.busbw_gbs() == pytest.approx((326.80 + 327.36) / 2)


def test_busbw_prefers_all_reduce_over_other_collectives():
    result = ingest([FIXTURES / "nccl_tests_all_gather.txt", FIXTURES / "nccl_tests_old_columns.txt"])
    assert result.busbw_gbs() == pytest.approx(327.08)


def test_rank_table_csv_milliseconds_duplicates_and_straggler():
    src = one("rank_steps_ms.csv")
    assert (src["format"], src["variant"], src["samples"]) == ("rank-table", "step", 5)
    # per step the slowest rank (rank 2 runs 10% slow); (4, 0) has a slower duplicate
    assert src["step_time_s"]["max"] == pytest.approx(2.213)
    assert src["stragglers"]["straggler_ranks"] == [2]
    assert any("2 duplicate" in n for n in src["notes"])


def test_rank_table_spans():
    src = one("rank_spans.csv")
    assert src["variant"] == "span"
    assert src["step_time_s"]["mean"] == pytest.approx(2.49)  # rank 1 ends 0.5 s later
    assert src["stragglers"]["slowest_ranks"][0]["rank"] == 1


def test_op_trace_names_the_slow_rank_and_takes_world_size_from_meta():
    result = ingest([FIXTURES / "trace-ops.csv", FIXTURES / "meta-ops.yaml"]).to_dict()
    table, meta = result["sources"]
    assert table["variant"] == "op" and meta["format"] == "straggler-meta"
    assert table["stragglers"]["basis"] == "busy_s"
    assert table["stragglers"]["straggler_ranks"] == [3]
    assert table["stragglers"]["slowest_ranks"][0]["mean_s"] == pytest.approx(1.5)
    assert table["step_time_s"]["mean"] == pytest.approx(2.1)   # every rank ends at 2.1 s
    assert table["gpus"] == 4


def test_every_fixture_is_recognised():
    result = ingest([FIXTURES])
    assert [Path(s["path"]).name for s in result.skipped] == ["README.md"]   # a document
    formats = {s.format for s in result.sources}
    assert formats >= {"megatron", "nemo", "mlperf", "mlperf-system", "torchtitan", "deepspeed",
                       "hf-trainer", "ms-swift", "maxtext", "nanochat", "internevo", "kineto",
                       "nccl-tests", "rank-table", "straggler-meta"}


def test_ms_swift_single_record_is_a_cumulative_mean(tmp_path):
    path = tmp_path / "swift.log"
    path.write_text("{'loss': 1.5, 'global_step/max_steps': '10/100', 'elapsed_time': '32s', "
                    "'train_speed(iter/s)': 0.3125}\n")
    src = ingest([path]).to_dict()["sources"][0]
    assert (src["aggregation"], src["steps"], src["warmup_excluded"]) == ("cumulative", 10, 0)
    assert src["step_time_s"]["mean"] == pytest.approx(3.2)
