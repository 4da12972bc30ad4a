"""One parser per log family; each takes the file's text and name and returns a Parsed."""

from __future__ import annotations

from typing import Callable

from procure.measure.parsers import (deepspeed, hf, kineto, megatron, meta, mlperf, nccl_tests,
                                     nemo, simple, swift, torchtitan)
from procure.measure.samples import Parsed

TextParser = Callable[[str, str], Parsed]

TEXT_PARSERS: dict[str, TextParser] = {
    "megatron": megatron.parse,
    "nemo": nemo.parse,
    "mlperf": mlperf.parse,
    "mlperf-system": mlperf.parse_system,
    "torchtitan": torchtitan.parse,
    "deepspeed": deepspeed.parse,
    "hf-trainer": hf.parse,
    "ms-swift": swift.parse,
    "maxtext": simple.parse_maxtext,
    "nanochat": simple.parse_nanochat,
    "internevo": simple.parse_internevo,
    "kineto": kineto.parse,
    "nccl-tests": nccl_tests.parse,
    "straggler-meta": meta.parse,
}
