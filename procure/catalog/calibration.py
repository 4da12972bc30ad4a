"""Read the fitted step-time knobs (``hardware_catalog/calibration.yaml``) into ``Knobs``.

I/O edge: the model itself never reads files. ``tools/calibrate.py`` writes the YAML.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from procure.catalog.knobs import AccelKnobs, Knobs
from procure.resources import catalog_dir

CALIBRATION_FILE = "calibration.yaml"
_FIELDS = ("gemm_top", "membound_factor", "launch_overhead_s", "scale_up_bw_eff",
           "scale_out_bw_eff", "overlap_efficiency", "step_time_cv")


def _accel_knobs(block: dict, base: AccelKnobs) -> AccelKnobs:
    values = {k: block[k] for k in _FIELDS if k in block}
    for key, value in values.items():
        if value is not None:
            values[key] = float(value)
    if "gemm_curve" in block:
        values["gemm_curve"] = tuple((float(t), float(f)) for t, f in block["gemm_curve"])
    return AccelKnobs(**{**base.__dict__, **values})


def knobs_from_document(doc: dict) -> Knobs:
    """Knobs from a parsed ``procure.calibration/v1`` document."""
    default = _accel_knobs(doc.get("default") or {}, AccelKnobs())
    by_id = {str(i): _accel_knobs(b or {}, default)
             for i, b in (doc.get("accelerators") or {}).items()}
    return Knobs(default=default, by_accelerator=by_id,
                 fitted_on=tuple(doc.get("fitted_on") or ()), fitted_at=str(doc.get("fitted_at", "")),
                 fit_mape={k: float(v) for k, v in (doc.get("fit_mape") or {}).items()})


@lru_cache(maxsize=4)
def _load(path: Path) -> Knobs:
    import yaml

    return knobs_from_document(yaml.safe_load(path.read_text(encoding="utf-8")) or {})


def load_knobs(path: Path | None = None) -> Knobs:
    """The calibrated knobs shipped in the catalog (or read from ``path``)."""
    return _load(Path(path) if path else catalog_dir() / CALIBRATION_FILE)
