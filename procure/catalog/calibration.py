"""Read the fitted step-time knobs (``hardware_catalog/calibration.yaml``) into ``Knobs``.

I/O edge: the model itself never reads files. ``benchmarks/refit.py`` writes the YAML. The file is
read like every other input: YAML with positions, then a frozen pydantic schema, so a broken file
is a ``file:line:col`` diagnostic, never a traceback.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from procure.catalog.knobs import SCALAR_KNOBS, AccelKnobs, Knobs, StepTimeError
from procure.resources import catalog_dir

if TYPE_CHECKING:   # the schema is built only when the file is read, not when the cache answers
    from procure.catalog.calibration_schema import CalibrationDocument, KnobBlock

CALIBRATION_FILE = "calibration.yaml"
SCHEMA = "procure.calibration/v1"


def _accel_knobs(block: KnobBlock, base: AccelKnobs) -> AccelKnobs:
    values: dict[str, Any] = {k: float(v) for k in SCALAR_KNOBS if (v := getattr(block, k)) is not None}
    if block.gemm_curve is not None:
        values["gemm_curve"] = tuple((float(t), float(f)) for t, f in block.gemm_curve)
    values["fitted"] = block.fitted
    values["fitted_on"] = tuple(block.fitted_on)
    values["sources"] = tuple(block.sources)
    return AccelKnobs(**{**base.__dict__, **values})


def knobs_from_model(doc: CalibrationDocument) -> Knobs:
    default = _accel_knobs(doc.default, AccelKnobs())
    by_id = {str(i): _accel_knobs(b, default) for i, b in doc.accelerators.items()}
    errors = {fam: StepTimeError(fam, float(e.bias), float(e.sigma_log), int(e.n))
              for fam, e in doc.step_time_errors.items()}
    unseen = doc.unseen_stack
    return Knobs(default=default, by_accelerator=by_id, fitted_on=tuple(doc.fitted_on),
                 fitted_at=doc.fitted_at, fit_mape={k: float(v) for k, v in doc.fit_mape.items()},
                 step_time_errors=errors,
                 unseen_stack_sigma_log=float(unseen.sigma_log) if unseen else 0.0,
                 fitted_stacks=frozenset(unseen.fitted_stacks) if unseen else frozenset())


def knobs_from_document(doc: dict[str, Any], source: str = "calibration document") -> Knobs:
    """Knobs from a parsed ``procure.calibration/v1`` document (validated; InputError when not)."""
    from procure.catalog.calibration_schema import CalibrationDocument
    from procure.sources.validate import validate_document
    from procure.sources.yamlpos import YamlDocument

    return knobs_from_model(validate_document(YamlDocument(source, doc), CalibrationDocument))


def read_calibration(path: Path) -> CalibrationDocument:
    """The validated document at ``path``; every problem is a ``file:line:col`` InputError."""
    from procure.catalog.calibration_schema import CalibrationDocument
    from procure.sources.validate import validate_document
    from procure.sources.yamlpos import read_yaml

    doc: CalibrationDocument = validate_document(read_yaml(path), CalibrationDocument)
    return doc


@lru_cache(maxsize=4)
def _load(path: Path | None) -> Knobs:
    if path is not None:
        return knobs_from_model(read_calibration(path))
    from procure.catalog.cache import cached, default_roots

    shipped = catalog_dir() / CALIBRATION_FILE
    return cached("knobs", default_roots(), lambda: knobs_from_model(read_calibration(shipped)))


def load_knobs(path: Path | None = None) -> Knobs:
    """The calibrated knobs shipped in the catalog (from the catalog cache while its files are
    unchanged), or read from ``path``."""
    return _load(Path(path) if path else None)
