"""The economics layer: from a step time to throughput, goodput, time, cost, flags and bands.

Pure: no I/O, no clock, no printing. Money is Decimal (``procure.money``); numpy is imported
lazily by the Monte-Carlo band only. The names below load on first use (PEP 562), so a command
that needs one submodule (``estimate`` needs ``statistical``) does not import the whole layer.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from procure.economics.bid import BasisCost, BidEconomics, evaluate_bid, evaluate_core
    from procure.economics.cost import BASES, DEFAULT_BASIS
    from procure.economics.flags import FLAG_CODES, Flag
    from procure.economics.inputs import (Assumptions, BidCase, Commitment, Performance, Pricing,
                                          StepTimeError)

_HOME = {
    "BasisCost": "bid", "BidEconomics": "bid", "evaluate_bid": "bid", "evaluate_core": "bid",
    "BASES": "cost", "DEFAULT_BASIS": "cost", "FLAG_CODES": "flags", "Flag": "flags",
    "Assumptions": "inputs", "BidCase": "inputs", "Commitment": "inputs", "Performance": "inputs",
    "Pricing": "inputs", "StepTimeError": "inputs",
}
__all__ = ["BASES", "DEFAULT_BASIS", "FLAG_CODES", "Assumptions", "BasisCost", "BidCase", "BidEconomics",
           "Commitment", "Flag", "Performance", "Pricing", "StepTimeError", "evaluate_bid", "evaluate_core"]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'procure.economics' has no attribute {name!r}")
    return getattr(import_module(f"procure.economics.{_HOME[name]}"), name)
