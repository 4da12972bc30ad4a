"""What the step-time figures of one bid stand on: the software release modeled, whether the
model is fitted for the accelerator (and its error on the bid's family), and the nearest
published vendor-tuned recipe next to the bid's plan."""

from __future__ import annotations

from typing import Any

from procure.report.formatting import Formatter


def model_basis(bid: dict[str, Any], f: Formatter) -> list[str]:
    """One sentence per fact, in the report's language; empty when the document has none."""
    return [line for line in (_software(bid, f), _calibration(bid, f), _recipe(bid, f)) if line]


def _software(bid: dict[str, Any], f: Formatter) -> str:
    sw = bid.get("software")
    if not sw:
        return ""
    return f.msg("model.software", stack=f.text(sw.get("stack")), version=f.text(sw.get("version")),
                 released=f.text(sw.get("released")))


def _calibration(bid: dict[str, Any], f: Formatter) -> str:
    cal = bid.get("calibration")
    if not cal:
        return ""
    err = cal.get("step_time_error") or {}
    key = "model.fitted" if cal.get("fitted") else "model.unfitted"
    return f.msg(key, accelerator=f.text(cal.get("accelerator")), sources=f.integer(len(cal.get("fitted_on") or [])),
                 family=f.text(err.get("family")), bias=f.change(err.get("bias")), sigma=f.percent(err.get("sigma_log"), 0),
                 runs=f.integer(err.get("n")))


def _recipe(bid: dict[str, Any], f: Formatter) -> str:
    rec = bid.get("tuned_recipe")
    if not rec:
        return ""
    return f.msg("model.recipe", recipe=_publication(rec), gpus=f.integer(rec.get("recipe_gpus")),
                 accelerator=f.text(rec.get("recipe_accelerator")),
                 measured=f.seconds(rec.get("recipe_measured_step_time_s")),
                 predicted=f.seconds(rec.get("recipe_predicted_step_time_s")),
                 searched=f.seconds(rec.get("search_step_time_at_recipe_scale_s")),
                 ratio=f.sig(rec.get("search_to_measured"), 2))


def _publication(recipe: dict[str, Any]) -> str:
    """The recipe by the publication it comes from (its source up to the table and column, which
    the sentence states itself), never the corpus id."""
    source = str(recipe.get("recipe_source") or "")
    return source.split(", ")[0] if source else str(recipe.get("recipe_id"))
