"""`procure estimate` shows the run the quote costs (issue 27 item 7): time to train, goodput and
GPU-hours per bid and per phase, equal to the quote's own figures for the model's step time."""

from __future__ import annotations

import pytest

from procure import api
from shared_root import REPO

EXAMPLE = REPO / "examples" / "cluster.yaml"


@pytest.fixture(scope="module")
def both():
    doc = api.quote_document(EXAMPLE)
    return api.estimate(EXAMPLE), {bid.id: bid for bid in doc.bids}


def test_estimate_states_time_goodput_and_gpu_hours_for_every_feasible_bid(both):
    estimated, _ = both
    for bid in estimated["bids"]:
        run = bid["run"]
        assert (run is not None) == bool(bid["feasible"]), bid["id"]
        if run:
            assert run["time_to_train_days"] > 0 and 0 < run["goodput"]["fraction"] <= 1
            assert run["gpu_hours"] == pytest.approx(run["time_to_train_days"] * 24 * bid["gpus"])
            assert sum(p["gpu_hours"] for p in run["phases"]) == pytest.approx(run["gpu_hours"])


def test_estimate_matches_the_quote_where_the_quote_uses_the_model(both):
    estimated, quoted = both
    compared = 0
    for bid in estimated["bids"]:
        doc_bid = quoted[bid["id"]]
        if bid["run"] is None or doc_bid.step_time_basis != "modeled":
            continue        # a measured bid's quote runs at its logs' step time
        compared += 1
        assert bid["run"]["time_to_train_days"] == pytest.approx(doc_bid.time_to_train_days, rel=1e-5)
        assert bid["run"]["goodput"]["fraction"] == pytest.approx(doc_bid.goodput.fraction, rel=1e-5)  # the document keeps 6 digits
    assert compared >= 3
