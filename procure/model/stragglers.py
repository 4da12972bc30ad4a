"""The slowest-participant tail of a synchronous step.

A step ends when its slowest GPU ends. With per-GPU step times ~ Normal(mu, (cv*mu)^2),
independent across n GPUs, the step time is the maximum of n draws:
  * mean:       mu * (1 + cv * E[max of n standard normals])
  * quantile q: mu * (1 + cv * Phi^-1(q^(1/n)))     since P(max <= x) = Phi(x)^n
E[max] is integrated numerically, E = int x n phi(x) Phi(x)^(n-1) dx on a fine grid (exact to
1e-6); it grows like sqrt(2 ln n) (the spec's z_n) for large n but is right for small n
(sqrt(2 ln 2) = 1.18 overstates E[max of 2] = 0.56).
SimuMax's fitted inflation ``r(n)`` is kept as a documented alternative.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

import numpy as np

_STD = NormalDist()
_X = np.linspace(-10.0, 12.0, 22001)
_SQRT2 = math.sqrt(2.0)
_LOG_CDF = np.log(np.maximum(0.5 * np.array([math.erfc(-x / _SQRT2) for x in _X.tolist()]), 1e-300))
_PDF = np.exp(-0.5 * _X ** 2) / math.sqrt(2.0 * math.pi)


@lru_cache(maxsize=256)
def expected_max_z(n: float) -> float:
    """E[max of n iid standard normals]; 0 for n <= 1."""
    if n <= 1:
        return 0.0
    density = n * _PDF * np.exp((n - 1.0) * _LOG_CDF)
    return float(np.sum(_X * density) / np.sum(density))   # uniform grid: sums suffice


def quantile_max_z(n: float, q: float) -> float:
    """Quantile q of the max of n iid standard normals."""
    if n <= 1:
        return _STD.inv_cdf(q)
    return _STD.inv_cdf(q ** (1.0 / n))


def step_percentiles(mu_s: float, cv: float, n: int) -> dict[str, float]:
    """Mean and P50/P95/P99 of the step time from the deterministic per-GPU time ``mu_s``."""
    return {
        "mean": mu_s * (1.0 + cv * expected_max_z(n)),
        "p50": mu_s * (1.0 + cv * quantile_max_z(n, 0.50)),
        "p95": mu_s * (1.0 + cv * quantile_max_z(n, 0.95)),
        "p99": mu_s * (1.0 + cv * quantile_max_z(n, 0.99)),
    }
