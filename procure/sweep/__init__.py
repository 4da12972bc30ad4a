"""``procure sweep``: before the RFQ, what to ask for.

A sweep expands workloads x accelerators x networks x GPU counts x price terms into points, runs
the quote's plan search and economics on each (``evaluate``), in batches on every core or on Dask
(``execute``) with partial results kept for resume (``store``), and finds the frontier of time to
train against cost, the best point per accelerator and per term, the points that meet the
constraints and a suggested RFQ ask (``analyse``). The result is the typed ``procure.sweep/v1``
document (``document``); renderers live in ``procure.report.sweep``.

Layer 8, beside ``pipeline``: it wires the inputs, the cores and the document.
"""

from procure.sweep.document import SCHEMA, SweepDocument
from procure.sweep.expand import SweepPlan, plan_sweep
from procure.sweep.load import SweepInputs, load_sweep
from procure.sweep.run import SweepRun, run_sweep

__all__ = ["SCHEMA", "SweepDocument", "SweepInputs", "SweepPlan", "SweepRun", "load_sweep",
           "plan_sweep", "run_sweep"]
