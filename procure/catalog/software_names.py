"""The vocabulary of training stacks: stack names, features and attention kernels.

Its own module because both the release schema (``software_schema``) and the loader
(``software``) need it, and they must not import each other."""

from __future__ import annotations

STACKS = ("megatron-core", "megatron-lm", "nemo", "megatron-bridge", "torchtitan", "deepspeed",
          "fsdp", "maxtext", "primus", "hai-llm", "metaseq", "llm-foundry", "other")
# Names that run another stack's engine: NeMo 2 and Megatron-Bridge drive Megatron-Core; the
# Megatron-LM repository ships it.
ALIASES = {"megatron-lm": "megatron-core"}
FEATURES = (
    "tp", "sequence_parallel", "tp_comm_overlap", "pp", "interleaved_pp", "uneven_pp", "cp",
    "ep", "distributed_optimizer", "zero2", "zero3", "zero3_with_pp", "dp_overlap",
    "param_gather_overlap", "fp8_delayed", "fp8_current", "mxfp8", "fp8_blockwise",
    "selective_recompute", "full_recompute", "activation_offload", "cuda_graphs",
    # issue 11: MoE dispatchers (DeepEP, HybridEP), EP all-to-all overlap, fp8 dispatch, and
    # all-to-all (Ulysses-style) context parallelism
    "deepep", "hybridep", "ep_a2a_overlap", "fp8_dispatch", "cp_a2a",
    # issue 27: DeepSeek's bidirectional pipeline schedule (DualPipe); a pipeline engine that
    # splits any layer count over the stages (the largest stage sets the pace)
    "dualpipe", "pp_any_split",
)
FP8_RECIPES = ("mxfp8", "fp8_current", "fp8_delayed", "fp8_blockwise")   # preference order
# fa1: FlashAttention's first version (2022); fa2, fa3: its successors; unfused: batched matmuls and
# a separate softmax (Megatron 2020-22, fairseq/metaseq before November 2022)
ATTENTION_KERNELS = ("fa1", "fa2", "fa3", "cudnn", "ck", "unfused")
