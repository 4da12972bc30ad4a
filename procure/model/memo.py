"""Identical problems estimated once per quote.

A large RFQ repeats itself: many bids offer the same accelerator, network, GPU count and plan at
different prices. Within one quote the model and the knobs are fixed, so such bids share one
estimate (per workload: a phase, a batch) and one scaling curve. The memo lives as long as one
quote (``one_quote``; every quote starts empty, so results never depend on what ran before), and
each caller gets its own deep copy, so nothing one bid does to its estimate reaches another.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from procure.catalog.software import SoftwareStack
from procure.catalog.types import Accelerator, Network
from procure.model.types import PlanSpec, Workload

T = TypeVar("T")


def problem_key(accel: Accelerator, network: Network, gpus: int, workload: Workload,
                plan: PlanSpec | dict[str, Any] | None, measured_busbw_gbs: float | None, step_time_cv: float | None,
                software: SoftwareStack | None) -> tuple[Hashable, ...]:
    """What distinguishes two problems within one quote (the model and the knobs are the quote's;
    the workload is a phase's or a batch's). Catalog entries by id: one quote reads one catalog."""
    if isinstance(plan, dict):
        plan = PlanSpec.from_dict(plan)
    return (accel.id, accel.scale_up_domain, network.id, gpus, workload, plan, measured_busbw_gbs, step_time_cv,
            software)


class Memo:
    """Results by key, computed once; every lookup returns a fresh deep copy."""

    def __init__(self) -> None:
        self._store: dict[tuple[str, tuple[Hashable, ...]], Any] = {}
        self.hits = 0

    def get(self, kind: str, key: tuple[Hashable, ...], compute: Callable[[], T]) -> T:
        slot = (kind, key)
        if slot in self._store:
            self.hits += 1
        else:
            self._store[slot] = compute()
        result: T = copy.deepcopy(self._store[slot])
        return result


_ACTIVE: ContextVar[Memo | None] = ContextVar("procure_quote_memo", default=None)


@contextmanager
def one_quote() -> Iterator[Memo]:
    """The memo of one quote: active inside the ``with`` (the pipeline wraps a quote in it), gone
    after, so nothing is shared between quotes."""
    memo = Memo()
    token = _ACTIVE.set(memo)
    try:
        yield memo
    finally:
        _ACTIVE.reset(token)


def memoised(kind: str, key: tuple[Hashable, ...], compute: Callable[[], T]) -> T:
    """``compute()`` once per key within the active quote; outside a quote, every time."""
    memo = _ACTIVE.get()
    return compute() if memo is None else memo.get(kind, key, compute)
