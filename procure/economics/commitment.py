"""A commitment stated at the vendor's own conditions, converted to the bid's.

A vendor may commit a step time measured at its own global batch, sequence length or precision
("2.1 s at 4M tokens per step" against an RFQ at 16M). The step-time model times the bid's
hardware and software at both conditions, and the committed figures are scaled by the ratio:

    converted = committed × T_model(bid's conditions) / T_model(stated conditions)

so what the vendor measured and the model does not know (its kernels, its tuning) is kept, and
only the change of conditions is the model's. The conversion is trusted within bounds; beyond
them the commitment is ``not-comparable`` (flagged, and left out of the commitment flags):

* the model finds a plan at both conditions;
* the conversion factor is within 1/MAX_FACTOR .. MAX_FACTOR (three doublings of work: beyond,
  the converted figure is more the model's than the vendor's);
* the sequence length changes by at most MAX_SEQ_RATIO (beyond, attention's share of the step
  and the plan itself change too much for a ratio of two predictions to carry the measurement).
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_FACTOR = 8.0
MAX_SEQ_RATIO = 4.0


@dataclass(frozen=True)
class Conditions:
    """What a step time was measured (or is evaluated) at."""

    global_batch_seqs: int
    seq_len: int
    precision: str

    @property
    def global_batch_tokens(self) -> int:
        return self.global_batch_seqs * self.seq_len

    def describe(self) -> str:
        return (f"{self.global_batch_tokens:,} tokens per step ({self.global_batch_seqs:,} × {self.seq_len:,}), "
                f"{self.precision}")


@dataclass(frozen=True)
class StatedCommitment:
    """The commitment as the vendor stated it, and its conversion to the bid's conditions (the
    names are the result document's, which reads this record by attribute)."""

    step_time_s: float | None
    p99_step_time_s: float | None
    conditions: Conditions               # what the vendor measured at
    bid_conditions: Conditions           # what the bid is evaluated at
    modeled_at_stated_s: float | None
    modeled_at_bid_s: float | None
    conversion_factor: float | None      # T_model(bid) / T_model(stated); None: not converted
    comparable: bool
    reason: str | None = None            # why not comparable

    def converted(self, value: float | None) -> float | None:
        if value is None or not self.comparable or self.conversion_factor is None:
            return None
        return value * self.conversion_factor

    @property
    def converted_step_time_s(self) -> float | None:
        return self.converted(self.step_time_s)

    @property
    def converted_p99_step_time_s(self) -> float | None:
        return self.converted(self.p99_step_time_s)

    def describe(self) -> str:
        """A phrase for flag reasons: what was stated, at which conditions."""
        stated = self.conditions.describe()
        return f"{self.step_time_s:.3g} s at {stated}" if self.step_time_s else stated


def seq_too_far(stated: Conditions, bid: Conditions) -> bool:
    """The sequence length changes more than MAX_SEQ_RATIO either way: not converted (nor modeled)."""
    ratio = stated.seq_len / bid.seq_len
    return max(ratio, 1.0 / ratio) > MAX_SEQ_RATIO


def _unconvertible(stated: Conditions, bid: Conditions, at_stated: float | None, at_bid: float | None) -> str:
    if seq_too_far(stated, bid):
        return (f"the sequence length changes from {stated.seq_len:,} to {bid.seq_len:,}, more than "
                f"{MAX_SEQ_RATIO:g}x: attention's share of the step and the plan change too much to convert")
    if at_stated is None:
        return f"the model finds no plan for this bid at the stated conditions ({stated.describe()})"
    if at_bid is None:
        return f"the model finds no plan for this bid at its own conditions ({bid.describe()})"
    factor = at_bid / at_stated
    if not 1.0 / MAX_FACTOR <= factor <= MAX_FACTOR:
        return (f"the model's conversion factor {factor:.3g} is beyond {MAX_FACTOR:g}x either way: the "
                "converted figure would be the model's, not the vendor's")
    return ""


def convert(step_time_s: float | None, p99_step_time_s: float | None, stated: Conditions, bid: Conditions,
            modeled_at_stated_s: float | None, modeled_at_bid_s: float | None) -> StatedCommitment:
    """The stated commitment and its conversion (factor exactly 1 when the conditions are the bid's)."""
    if stated == bid:
        return StatedCommitment(step_time_s, p99_step_time_s, stated, bid, modeled_at_bid_s, modeled_at_bid_s,
                                1.0, True)
    reason = _unconvertible(stated, bid, modeled_at_stated_s, modeled_at_bid_s)
    factor = None if reason or not modeled_at_stated_s or not modeled_at_bid_s else modeled_at_bid_s / modeled_at_stated_s
    return StatedCommitment(step_time_s, p99_step_time_s, stated, bid, modeled_at_stated_s, modeled_at_bid_s,
                            factor, not reason, reason or None)
