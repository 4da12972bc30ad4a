"""Statistical efficiency of the global batch, per model family, as catalog data
(``hardware_catalog/batch_scaling/<family>.yaml``).

A family's file holds the parameters of one law, each value with its own source:

* the tokens a run needs to reach a loss at global batch B, ``E(B) = E_min (1 + B / B_crit)``
  (McCandlish et al. 2018, the gradient-noise-scale model);
* a critical batch that grows as the loss falls, ``B_crit(L) = B_star / L^(1 / alpha_B)``
  (Kaplan et al. 2020, eq. 1.4);
* the loss along training, ``L(N, D) = ((N_c / N)^(alpha_N / alpha_D) + D_c / D)^alpha_D``
  (Kaplan et al. 2020, eq. 1.5; N non-embedding parameters, D tokens seen);
* the spread of ``B_star`` (lognormal, ``b_star_sigma_log``) that the Monte-Carlo band draws.

The economics evaluates the law (``procure.economics.statistical``); this module only reads,
validates (``file:line:col`` diagnostics) and types it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Union

from pydantic import Field, model_validator

from procure.catalog.types import BATCH_SCALING_PARAMETERS as PARAMETERS
from procure.catalog.types import BatchScalingLaw, Sourced
from procure.errors import Diagnostic, InputError
from procure.sources.fields import Finite, Strict

FOLDER = "batch_scaling"
SCHEMA = "procure.batch_scaling/v1"
FAMILIES = ("dense", "moe")


class SourcedValue(Strict):
    value: Finite = Field(description="The number.")
    source: Union[str, list[str]] = Field(description="Where it comes from (paper, equation or table); a judgement says so and why.")
    notes: str = Field("", description="Caveats.")

    @property
    def sources(self) -> tuple[str, ...]:
        return (self.source,) if isinstance(self.source, str) else tuple(self.source)


class Parameters(Strict):
    b_star_tokens: SourcedValue = Field(description="B_star, tokens: the critical batch at a loss of 1 nat.")
    alpha_b: SourcedValue = Field(description="alpha_B: B_crit(L) = B_star / L^(1 / alpha_B).")
    n_c: SourcedValue = Field(description="N_c, non-embedding parameters, of the loss law.")
    alpha_n: SourcedValue = Field(description="alpha_N of the loss law.")
    d_c_tokens: SourcedValue = Field(description="D_c, tokens, of the loss law.")
    alpha_d: SourcedValue = Field(description="alpha_D of the loss law; must be below alpha_B.")
    b_star_sigma_log: SourcedValue = Field(description="Spread of ln(B_star) the band draws (lognormal).")

    @model_validator(mode="after")
    def _physical(self) -> "Parameters":
        for name in PARAMETERS:
            value = getattr(self, name).value
            if not value > 0:
                raise ValueError(f"`parameters.{name}` must be positive, got {value!r}")
        if self.b_star_sigma_log.value > 3.0:
            raise ValueError("`parameters.b_star_sigma_log` above 3 (a factor of 20 at one sigma) says nothing")
        # the tokens integral of 1 / B_crit over training converges only when alpha_D < alpha_B
        if not self.alpha_d.value < self.alpha_b.value:
            raise ValueError(f"`parameters.alpha_d` ({self.alpha_d.value}) must be below `parameters.alpha_b` "
                             f"({self.alpha_b.value}): otherwise the critical batch falls to zero too fast at the "
                             "start of training for the token count to be finite")
        return self


class BatchScalingEntry(Strict):
    schema_: Literal["procure.batch_scaling/v1"] = Field(alias="schema", description="`procure.batch_scaling/v1`.")
    family: Literal[FAMILIES] = Field(description="`dense` or `moe`; equals the file name.")   # type: ignore[valid-type]
    name: str = Field(description="Display name of the family.")
    form: str = Field(description="The law in words and symbols, with the papers it comes from.")
    parameter_count: Literal["non_embedding", "active_non_embedding"] = Field("non_embedding", description="Which N the loss law reads: `non_embedding` parameters, or `active_non_embedding` (mixture-of-experts).")
    as_of: str = Field(description="Date of the sources.")
    verified: bool = Field(True, description="Whether the values were seen in the cited sources.")
    notes: str = Field("", description="Caveats: the data the law was fitted on, how far it carries.")
    parameters: Parameters = Field(description="The law's parameters, each with its own source.")


def _law(e: BatchScalingEntry) -> BatchScalingLaw:
    p = e.parameters
    sources = {name: getattr(p, name).sources for name in PARAMETERS}
    every = tuple(dict.fromkeys(s for name in PARAMETERS for s in sources[name]))
    return BatchScalingLaw(
        family=e.family, name=e.name, form=" ".join(e.form.split()),
        **{name: float(getattr(p, name).value) for name in PARAMETERS},
        parameter_count=e.parameter_count, sources=sources,
        sourced=Sourced(every, e.as_of, e.verified), notes=" ".join(e.notes.split()))


def load_batch_scaling(folder: Path, files: dict[str, Any], diagnostics: list[Diagnostic]) -> dict[str, BatchScalingLaw]:
    """Every family file of ``folder`` (absent folder: none); problems appended as diagnostics."""
    from procure.sources.validate import validate_document
    from procure.sources.yamlpos import read_yaml

    laws: dict[str, BatchScalingLaw] = {}
    if not folder.is_dir():
        return laws
    for path in sorted(folder.glob("*.yaml")):
        try:
            doc = read_yaml(path)
            entry = validate_document(doc, BatchScalingEntry)
        except InputError as exc:
            diagnostics.extend(exc.diagnostics)
            continue
        if entry.family != path.stem:
            diagnostics.append(Diagnostic(str(path), *doc.position(("family",)), "id-mismatch",
                                          f"family {entry.family!r} must equal the file name {path.stem!r}"))
            continue
        laws[entry.family] = _law(entry)
        files[f"batch-scaling:{entry.family}"] = str(path)
    return laws
