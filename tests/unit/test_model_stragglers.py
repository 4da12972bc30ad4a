"""The slowest-participant tail."""

from __future__ import annotations

import math

import numpy as np
import pytest

from procure.model.stragglers import expected_max_z, quantile_max_z, step_percentiles


def test_expected_max_of_normals_matches_known_values():
    assert expected_max_z(1) == 0.0
    assert expected_max_z(2) == pytest.approx(0.5642, abs=0.02)       # 1/sqrt(pi)
    assert expected_max_z(10) == pytest.approx(1.5388, abs=0.02)
    assert expected_max_z(1000) == pytest.approx(3.2414, abs=0.03)


def test_expected_max_against_monte_carlo():
    rng = np.random.default_rng(7)
    draws = rng.standard_normal((20000, 64)).max(axis=1).mean()
    assert expected_max_z(64) == pytest.approx(draws, abs=0.02)


def test_the_asymptotic_z_is_an_upper_bound():
    for n in (8, 512, 16384):
        assert expected_max_z(n) < math.sqrt(2 * math.log(n))     # z_n ~ sqrt(2 ln n), from above


def test_percentiles_of_the_max():
    assert quantile_max_z(1, 0.5) == pytest.approx(0.0, abs=1e-12)
    # P(max <= z) = Phi(z)^n
    z = quantile_max_z(100, 0.99)
    from statistics import NormalDist
    assert NormalDist().cdf(z) ** 100 == pytest.approx(0.99, rel=1e-9)
    pct = step_percentiles(10.0, 0.02, 4096)
    assert 10.0 < pct["p50"] < pct["mean"] < pct["p95"] < pct["p99"]

