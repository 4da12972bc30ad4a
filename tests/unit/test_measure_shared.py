"""Every real log and trace in ../shared/data/logs, with numbers determined by reading the files.

How the literals were obtained: the per-step values were extracted independently with a few
lines of json/re (e.g. every ``tracked_stats`` record carrying ``train_step_timing``), the
warm-up rule applied by hand (first max(1, floor(2%)) steps when the log starts with training)
and the statistics computed with numpy; they agree with ``ingest`` to 9 significant digits.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from procure.measure import ingest
from shared_root import SHARED

SHARED_LOGS = SHARED / "data" / "logs"

pytestmark = pytest.mark.shared


@pytest.fixture(scope="module")
def everything():
    if not SHARED_LOGS.is_dir():
        pytest.skip("../shared is absent (it holds the real logs)")
    result = ingest([SHARED_LOGS])
    return result, {Path(s["path"]).name: s for s in result.to_dict()["sources"]}


# name: (format, aggregation, steps, samples, warmup_excluded, mean, p50, p99, max, gpus)
EXPECTED = {
    # 62 iterations, log_interval 1; iteration 1 (144.9 s) is warm-up; mean of 2..62
    "megatron_1_bigscience_meg_ds_3d_gpt2_perf_n16-ds-off.out":
        ("megatron", "per-step", 62, 62, 1, 126.589069, 126.6406, 130.25826, 130.2639, 64),
    # excerpt from iteration 31214 with a [...] gap: seconds, no warm-up (not the start)
    "megatron_3_bloom176b_default7_seconds.log":
        ("megatron", "per-step", 11, 11, 0, 106.37, 106.33, 107.423, 107.53, None),
    # iterations 5..10 and 2400; the validation line is not a step
    "megatron_6_megatron_deepspeed_tgs_gpt3_175b.log":
        ("megatron", "per-step", 7, 7, 0, 341.646671, 345.3337, 347.304344, 347.3192, None),
    "megatron_7_pai_megatron_patch_qwen25vl_tokens_per_sec_gpu.log":
        ("megatron", "per-step", 4, 4, 0, 5.640075, 5.584, 5.852181, 5.8593, None),
    "nemo2_1_aichipbenchmark_qwen3_8b.log":
        ("nemo", "per-step", 3, 3, 0, 2.31966667, 2.389, 2.44192, 2.443, None),
    "nemo2_2_aichipbenchmark_llama3_8b.log":
        ("nemo", "per-step", 3, 3, 0, 12.2133333, 12.21, 12.2198, 12.22, None),
    # 288 train_step_timing values (24 blocks x 12 steps); first 5 (floor 2% of 288) excluded;
    # 512 GPUs from the (H100, 64-node) system descriptions ingested alongside
    "mlperf_v3.0_nvidia_gpt3_dgxh100_n64_result_0.txt":
        ("mlperf", "per-step", 288, 288, 5, 12.087456, 12.0831358, 12.1404193, 13.6872141, 512),
    "mlperf_v3.1_nvidia_gpt3_eos_n64_result_0.txt":
        ("mlperf", "per-step", 288, 288, 5, 11.0441804, 11.0453031, 11.0772803, 11.1147921, 512),
    # no per-step stats: 24 blocks of epoch_count 51,904,512 tokens = 11 steps of 2304 x 2048;
    # block duration / 11; the first block is warm-up. 512 GPUs from the embedded :::SYSJSON
    "mlperf_v4.0_nvidia_gpt3_eos_n64_result_0.txt":
        ("mlperf", "interval-mean", 264, 24, 1, 10.9023123, 10.9030909, 10.9072855, 10.9075455,
         512),
    # per-block throughput (samples/s), 8 samples per step: 192 + 5 x 48 steps
    "mlperf_v4.0_nvidia_llama2_70b_lora_eos_n8_result_0.txt":
        ("mlperf", "interval-mean", 432, 6, 1, 0.637590234, 0.637774145, 0.639235056, 0.63928166,
         64),
    # throughput between evaluations (epoch_num in samples, 768 per step), not whole steps
    "mlperf_v4.1_nvidia_bert_b200_preview_result_0.txt":
        ("mlperf", "interval-mean", 3514.47526, 18, 1, 0.0712703028, 0.0716554622, 0.0730628131,
         0.0731302483, None),
    # only a whole-run throughput: 4608 / 53540.83 samples/s over 652 steps (metadata [2, 652])
    "mlperf_v4.1_nvidia_bert_eos_n8_result_0.txt":
        ("mlperf", "whole-run", 652, 1, 0, 0.0860651519, 0.0860651519, 0.0860651519,
         0.0860651519, None),
    # key renamed "train_step_timing in s"
    "mlperf_v4.1_nvidia_gpt3_eos_n64_result_0.txt":
        ("mlperf", "per-step", 288, 288, 5, 9.49476333, 9.49310398, 9.51266699, 9.80309677, 512),
    # raw submitter log: "0: :::MLLOG", 8 nodes x 8 GPUs from its :::SYSJSON
    "mlperf_v4.1_oracle_llama2_70b_lora_64xBM.GPU.H100.8_result_0_raw.txt":
        ("mlperf", "interval-mean", 384, 5, 1, 0.55596047, 0.556105579, 0.556244698, 0.556248044,
         64),
    # block means of train_step_time (with throughput): 170 + 40 + 3 x 42 steps of 9 samples
    "mlperf_v5.0_nvidia_llama2_70b_lora_tyche_ngpu72_result_0.txt":
        ("mlperf", "interval-mean", 336, 5, 1, 0.237410845, 0.237453877, 0.237803714,
         0.237811939, 72),
    # 240 per-step train_step_time values (276480 samples / 1152 per step); the 6 records that
    # also carry throughput are block means of those same steps and are not counted again
    "mlperf_v5.0_nvidia_llama31_405b_eos-dfw_n64_result_0.txt":
        ("mlperf", "per-step", 240, 240, 4, 55.140305, 55.1014061, 55.3355038, 67.5951004, 512),
    # differencing elapsed_time every 5 steps up to "4 days, 7:19:52" at step 8712
    "hf_2_llamafactory_trainer_log.jsonl":
        ("hf-trainer", "interval-mean", 8712, 1743, 35, 42.6961462, 42.6, 43.2, 44.0, None),
    # 1 / train_steps_per_second (0.023, rounded by the Trainer)
    "hf_3_llamafactory_train_results.json":
        ("hf-trainer", "whole-run", 8556, 1, 0, 43.4782609, 43.4782609, 43.4782609, 43.4782609,
         None),
    # op traces: per step the slowest rank's span of ops; world size from the meta files
    "perrank_1_bytedance_stragglers_trace-AR.parquet":
        ("rank-table", "per-step", 44, 44, 0, 46.614183, 46.6288956, 46.958195, 46.9720917, 64),
    "perrank_1_bytedance_stragglers_trace-ST.parquet":
        ("rank-table", "per-step", 32, 32, 0, 2.20984603, 2.20869279, 2.37447964, 2.37642598, 8),
    "profiler_1_hta_sampled_rank-0.json.gz":
        ("kineto", "per-step", 2, 2, 0, 0.61512, 0.61512, 0.62277184, 0.622928, 128),
    "profiler_1_hta_sampled_rank-1.json.gz":
        ("kineto", "per-step", 2, 2, 0, 0.6192715, 0.6192715, 0.63041165, 0.630639, 128),
    "profiler_2_hta_nccl_data_a100_2rank.json.gz":
        ("kineto", "per-step", 3, 3, 0, 0.222368446, 0.222442191, 0.224886362, 0.224936243, 2),
    # ProfilerStep#1 as CPU and GPU annotation counted once; #2 (49 us, empty) dropped
    "profiler_3_hta_mi250_rocm_kineto.json.gz":
        ("kineto", "per-step", 1, 1, 0, 0.009288291, 0.009288291, 0.009288291, 0.009288291, None),
}

NO_STEPS = {
    "mlperf_v3.0_nvidia_system_dgxh100_n64_nemo.json": ("mlperf-system", 512),
    "mlperf_v4.0_nvidia_system_eos_n64_ngc24.04_nemo.json": ("mlperf-system", 512),
    "mlperf_v5.0_nvidia_system_eos-dfw_n64_ngc25.01_nemo.json": ("mlperf-system", 512),
    "mlperf_v5.0_nvidia_system_tyche_ngpu72_ngc25.04_nemo.json": ("mlperf-system", 72),
    "nccltests_1_aws_p5_allreduce_mpi_tagged.txt": ("nccl-tests", None),
    "nccltests_2_aws_readme_2x_p5_allreduce_with_gap.txt": ("nccl-tests", None),
    # three lines of three different runs: no two consecutive timestamps of one run
    "other_internevo_record_metrics.log": ("internevo", None),
    "perrank_1_bytedance_stragglers_meta-AR.yaml": ("straggler-meta", 64),
    "perrank_1_bytedance_stragglers_meta-ST.yaml": ("straggler-meta", 8),
}


def test_every_shared_file_is_ingested(everything):
    _, by_name = everything
    on_disk = {p.name for p in SHARED_LOGS.iterdir() if p.name != "README.md"}
    assert set(EXPECTED) | set(NO_STEPS) == on_disk
    assert set(by_name) == on_disk


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_shared_file_statistics(everything, name):
    _, by_name = everything
    src = by_name[name]
    fmt, aggregation, steps, samples, warmup, mean, p50, p99, top, gpus = EXPECTED[name]
    assert (src["format"], src["aggregation"]) == (fmt, aggregation)
    assert src["steps"] == pytest.approx(steps)
    assert (src["samples"], src["warmup_excluded"]) == (samples, warmup)
    st = src["step_time_s"]
    assert st["count"] == samples - warmup
    for key, value in (("mean", mean), ("p50", p50), ("p99", p99), ("max", top)):
        assert st[key] == pytest.approx(value, rel=1e-8), key
    assert src["gpus"] == gpus


@pytest.mark.parametrize("name", sorted(NO_STEPS))
def test_shared_files_without_step_times_say_so(everything, name):
    _, by_name = everything
    src = by_name[name]
    assert (src["format"], src["gpus"]) == NO_STEPS[name]
    assert src["steps"] == 0 and src["step_time_s"] is None and src["notes"]


def test_mlperf_405b_flags_the_67_6_s_step(everything):
    _, by_name = everything
    src = by_name["mlperf_v5.0_nvidia_llama31_405b_eos-dfw_n64_result_0.txt"]
    assert src["outliers"] == [{"step": 59, "step_time_s": 67.5951004}]
    assert any("6 block means" in n for n in src["notes"])


def test_mlperf_v4_gpt3_step_time_comes_from_blocks(everything):
    _, by_name = everything
    src = by_name["mlperf_v4.0_nvidia_gpt3_eos_n64_result_0.txt"]
    assert src["steps_per_sample"] == 11
    assert any("block_start..block_stop" in n for n in src["notes"])


def test_bytedance_ar_trace_names_the_slowed_rank(everything):
    _, by_name = everything
    ar = by_name["perrank_1_bytedance_stragglers_trace-AR.parquet"]["stragglers"]
    assert ar["basis"] == "busy_s" and ar["ranks"] == 16
    assert ar["straggler_ranks"] == [0]
    slowest = ar["slowest_ranks"][0]
    assert (slowest["rank"], slowest["times_slowest"]) == (0, 44)
    assert slowest["mean_s"] == pytest.approx(45.2885639)       # vs 19.23 s for the median rank
    assert ar["slowest_rank_cost"] == pytest.approx(0.574519291)
    # stage imbalance: the last pipeline stage (ranks 6 and 7) is slow
    st = by_name["perrank_1_bytedance_stragglers_trace-ST.parquet"]["stragglers"]
    assert st["straggler_ranks"] == [7, 6]


def test_kineto_sampled_ranks_share_stragglers(everything):
    _, by_name = everything
    r0 = by_name["profiler_1_hta_sampled_rank-0.json.gz"]
    assert r0["stragglers"]["ranks"] == 2
    assert r0["stragglers"]["slowest_ranks"][0]["rank"] == 1
    assert r0["collectives"]["send_recv"]["kernels"] == 10
    nccl = by_name["profiler_2_hta_nccl_data_a100_2rank.json.gz"]["collectives"]
    assert nccl["all_reduce"]["kernels"] == 15 and nccl["all_reduce"]["bytes"] == 306684384


def test_nccl_tests_large_message_bus_bandwidth(everything):
    result, by_name = everything
    first = by_name["nccltests_1_aws_p5_allreduce_mpi_tagged.txt"]["bus_bandwidth"]
    # rows of 1, 2, 4, 8, 16 GiB: mean(out, in) = 441.69, 443.95, 476.24, 480.395, 483.2
    assert first["large_message_gbs"] == pytest.approx(476.24)
    assert first["tables"][0]["avg_busbw_gbs"] == pytest.approx(156.742)
    assert len(first["tables"][0]["rows"]) == 32
    second = by_name["nccltests_2_aws_readme_2x_p5_allreduce_with_gap.txt"]["bus_bandwidth"]
    assert second["large_message_gbs"] == pytest.approx((313.29 + 437.84) / 2)
    assert result.busbw_gbs() == pytest.approx((476.24 + 375.565) / 2)


def test_single_shared_files(shared_dir):
    logs = shared_dir / "data" / "logs"
    alone = ingest([logs / "mlperf_v5.0_nvidia_llama31_405b_eos-dfw_n64_result_0.txt"])
    assert alone.sources[0].gpus is None            # the log states no GPU count on its own
    assert alone.step_time_summary()["p99"] == pytest.approx(55.3355038)
    tgs = ingest([logs / "megatron_6_megatron_deepspeed_tgs_gpt3_175b.log"]).to_dict()
    assert any("implies 64 GPUs" in n for n in tgs["sources"][0]["notes"])
