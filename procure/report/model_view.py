"""What the step-time figures of one bid stand on: the software release modeled, whether the
model is fitted for the accelerator (and its error on the bid's family), and the nearest
published vendor-tuned recipe next to the bid's plan."""

from __future__ import annotations

from typing import TYPE_CHECKING

from procure.report.formatting import Formatter

if TYPE_CHECKING:
    from procure.document.bid import BidResult, TunedRecipe


def model_basis(bid: BidResult, f: Formatter) -> list[str]:
    """One sentence per fact, in the report's language; empty when the document has none."""
    return [line for line in (_software(bid, f), _calibration(bid, f), _recipe(bid, f)) if line]


def _software(bid: BidResult, f: Formatter) -> str:
    sw = bid.software
    if sw is None:
        return ""
    return f.msg("model.software", stack=f.text(sw.stack), version=f.text(sw.version), released=f.text(sw.released))


def _calibration(bid: BidResult, f: Formatter) -> str:
    cal = bid.calibration
    if cal is None:
        return ""
    err = cal.step_time_error
    key = "model.fitted" if cal.fitted else "model.unfitted"
    text = f.msg(key, accelerator=f.text(cal.accelerator), sources=f.integer(len(cal.fitted_on)),
                 family=f.text(err.family), bias=f.change(err.bias), sigma=f.percent(err.sigma_log, 0),
                 runs=f.integer(err.n))
    if err.unseen_stack:      # the spread includes how far a source the fit never saw lands
        text += " " + f.msg("model.unseen_stack", stack=f.text(err.unseen_stack))
    return text


def _recipe(bid: BidResult, f: Formatter) -> str:
    rec = bid.tuned_recipe
    if rec is None:
        return ""
    return f.msg("model.recipe", recipe=_publication(rec), gpus=f.integer(rec.recipe_gpus),
                 accelerator=f.text(rec.recipe_accelerator),
                 measured=f.seconds(rec.recipe_measured_step_time_s),
                 predicted=f.seconds(rec.recipe_predicted_step_time_s),
                 searched=f.seconds(rec.search_step_time_at_recipe_scale_s),
                 ratio=f.sig(rec.search_to_measured, 2))


def _publication(recipe: TunedRecipe) -> str:
    """The recipe by the publication it comes from (its source up to the table and column, which
    the sentence states itself), never the corpus id."""
    source = str(recipe.recipe_source or "")
    return source.split(", ")[0] if source else str(recipe.recipe_id)
