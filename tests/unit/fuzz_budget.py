"""The fuzz suite's budget: how many generated inputs each fuzz test draws, seeded.

CI runs the default (``DEFAULT_TOTAL`` inputs across every fuzz test, ``derandomize``: the same
inputs on every run). A nightly run is one variable away:

    PROCURE_FUZZ_EXAMPLES=200000 python -m pytest tests/unit/test_fuzz_*.py     # 20x the inputs
    PROCURE_FUZZ_RANDOM=1 ...                                                  # new inputs each run

Each test declares its share as a weight (its number of examples at the default budget); the
shares scale with ``PROCURE_FUZZ_EXAMPLES / DEFAULT_TOTAL``. ``PROCURE_FUZZ_SHRINK=1`` lets
hypothesis shrink a failure to its smallest form (minutes; CI prints the failing example as is).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

DEFAULT_TOTAL = 10_000     # the inputs of all fuzz tests add up to at least this
REGISTRY: dict[str, int] = {}   # test -> generated inputs it checks at the current budget


def scale() -> float:
    wanted = os.environ.get("PROCURE_FUZZ_EXAMPLES")
    return max(int(wanted), 1) / DEFAULT_TOTAL if wanted else 1.0


def examples(weight: int) -> int:
    """This test's number of generated inputs at the current budget."""
    return max(1, round(weight * scale()))


PHASES = tuple(Phase) if os.environ.get("PROCURE_FUZZ_SHRINK") == "1" else \
    (Phase.explicit, Phase.reuse, Phase.generate, Phase.target)


def fuzz_settings(name: str, weight: int, batch: int = 1, deadline_ms: int = 5000) -> settings:
    """Settings for the fuzz test ``name``: ``weight`` hypothesis examples at the default budget,
    each checking ``batch`` generated inputs (inputs drawn from one seed cost hypothesis one draw)."""
    REGISTRY[name] = examples(weight) * batch
    return settings(max_examples=examples(weight), deadline=deadline_ms * batch, phases=PHASES,
                    derandomize=os.environ.get("PROCURE_FUZZ_RANDOM") != "1", database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture,
                                           HealthCheck.filter_too_much])
