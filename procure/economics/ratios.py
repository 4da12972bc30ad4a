"""The ratios a bid committee reads, as pure functions of the reported step-time terms.

Over the model's terms (seconds per step; ``step_time_terms`` of the document) and the model's
step time T (the additive terms sum to it):

* bubble ratio                 = bubble_s / T
* exposed communication        X = tp_comm_s + pp_comm_s + dp_comm_exposed_s + ep_comm_s + cp_comm_s
  (every ``*_comm_s`` term of the model is the exposed time of that dimension)
* hidden communication         H = max(comm_overlappable_s − comm_exposed_s, 0)
  (``comm_overlappable_s``: all communication that may run under compute; ``comm_exposed_s``:
  the part of it that did not hide)
* communication-to-computation = (X + H) / compute_s: all communication time over compute time
* overlap efficiency           = H / comm_overlappable_s (null when nothing can overlap)
* exposed-communication share  = X / T

and over the economics' figures:

* effective tokens per second per GPU = tokens per step / step time / GPUs × goodput / token
  factor: tokens toward the target per GPU per second of wall clock (checkpoints, failures and
  the batch's statistical-efficiency penalty included), so time to target = train tokens /
  (effective tokens per second per GPU × GPUs). The step time is the one that drives the
  economics (measured when logs gave one); the four term ratios stay the model's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

EXPOSED_COMM_TERMS = ("tp_comm_s", "pp_comm_s", "dp_comm_exposed_s", "ep_comm_s", "cp_comm_s")
OVERLAPPABLE_TERM = "comm_overlappable_s"
EXPOSED_OF_OVERLAPPABLE_TERM = "comm_exposed_s"

DEFINITIONS = (      # in the reader's words (the report prints them): no term keys
    ("bubble_ratio", "Bubble ratio", "bubble / step time",
     "Share of the step the pipeline stages sit idle while it fills and drains."),
    ("comm_to_compute", "Communication-to-computation ratio",
     "(exposed + hidden communication) / compute",
     "All communication time, hidden or not, over compute time; exposed communication is the tensor-, "
     "pipeline-, expert- and context-parallel communication plus the data-parallel part that does not hide, "
     "and hidden communication is the overlappable communication less the exposed part."),
    ("overlap_efficiency", "Overlap efficiency", "hidden / overlappable communication",
     "Share of the communication that can run under compute that did hide (not applicable when none can)."),
    ("exposed_comm_share", "Exposed-communication share", "exposed communication / step time",
     "Share of the step spent waiting on communication."),
    ("effective_tokens_per_s_per_gpu", "Effective tokens per second per GPU",
     "tokens per step / step time / GPUs × goodput / token factor",
     "Tokens toward the target per GPU per second of wall clock, with checkpoints, failures and the "
     "batch's statistical-efficiency penalty included; the training tokens divided by this and by the GPUs "
     "give the time to target."),
)


@dataclass(frozen=True)
class Ratios:
    bubble_ratio: float | None
    comm_to_compute: float | None
    overlap_efficiency: float | None
    exposed_comm_share: float | None
    effective_tokens_per_s_per_gpu: float | None


def _term(terms: Mapping[str, float], key: str) -> float:
    return float(terms.get(key) or 0.0)


def exposed_comm_s(terms: Mapping[str, float]) -> float:
    return sum(_term(terms, k) for k in EXPOSED_COMM_TERMS)


def hidden_comm_s(terms: Mapping[str, float]) -> float:
    return max(_term(terms, OVERLAPPABLE_TERM) - _term(terms, EXPOSED_OF_OVERLAPPABLE_TERM), 0.0)


def _share(part: float, whole: float) -> float | None:
    return part / whole if whole > 0 else None


def term_ratios(terms: Mapping[str, float], step_time_s: float | None) -> dict[str, float | None]:
    """The four ratios of the model's terms at the model's step time (None where undefined)."""
    if not terms or not step_time_s or step_time_s <= 0:
        return {"bubble_ratio": None, "comm_to_compute": None, "overlap_efficiency": None,
                "exposed_comm_share": None}
    exposed, hidden = exposed_comm_s(terms), hidden_comm_s(terms)
    return {"bubble_ratio": _share(_term(terms, "bubble_s"), step_time_s),
            "comm_to_compute": _share(exposed + hidden, _term(terms, "compute_s")),
            "overlap_efficiency": _share(hidden, _term(terms, OVERLAPPABLE_TERM)),
            "exposed_comm_share": _share(exposed, step_time_s)}


def effective_tokens_per_s_per_gpu(tokens_per_step: float, step_time_s: float, gpus: int,
                                   goodput_fraction: float, token_factor: float) -> float | None:
    if step_time_s <= 0 or gpus <= 0 or token_factor <= 0:
        return None
    return tokens_per_step / step_time_s / gpus * goodput_fraction / token_factor


def ratios(terms: Mapping[str, float], modeled_step_time_s: float | None, *, tokens_per_step: float,
           step_time_s: float | None, gpus: int, goodput_fraction: float | None,
           token_factor: float = 1.0) -> Ratios:
    """Every ratio of one plan: the term ratios at the model's step time, the effective throughput
    at the step time that drives the economics."""
    effective = None
    if step_time_s and goodput_fraction is not None:
        effective = effective_tokens_per_s_per_gpu(tokens_per_step, step_time_s, gpus, goodput_fraction,
                                                   token_factor)
    return Ratios(**term_ratios(terms, modeled_step_time_s), effective_tokens_per_s_per_gpu=effective)
