"""The economics layer: from a step time to throughput, goodput, time, cost, flags and bands.

Pure: no I/O, no clock, no printing. Money is Decimal (``procure.money``); numpy is imported
lazily by the Monte-Carlo band only.
"""

from procure.economics.bid import BasisCost, BidEconomics, evaluate_bid, evaluate_core
from procure.economics.cost import BASES, DEFAULT_BASIS
from procure.economics.flags import FLAG_CODES, Flag
from procure.economics.inputs import (Assumptions, BidCase, Commitment, Performance, Pricing,
                                      StepTimeError)

__all__ = ["BASES", "DEFAULT_BASIS", "FLAG_CODES", "Assumptions", "BasisCost", "BidCase", "BidEconomics",
           "Commitment", "Flag", "Performance", "Pricing", "StepTimeError", "evaluate_bid", "evaluate_core"]
