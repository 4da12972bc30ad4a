"""Terminal views of the commands' JSON-ready results. Formatting only, no arithmetic beyond unit
scaling for display; the layout (tables that never cut a figure or an id, the long layout below
a width, input text cleaned and never read as markup) is ``procure.report.terminal``'s."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from procure.report.formatting import Formatter
from procure.report.terminal import Column, print_line, print_pairs, print_stacked, print_table, text

if TYPE_CHECKING:
    from rich.console import Console

    from procure.catalog.views import EntryList, Shown
    from procure.compare_rounds import Change, Diff

# The JSON-ready result of a command (procure.estimate/v1, a backtest, procure.ingest/v1): its
# schema names the keys.
Result = Mapping[str, Any]

EN = Formatter("en", "USD")
NOT_PUBLISHED = "not published"


def _seconds(value: Any, digits: int = 4) -> str:
    return EN.na if value is None else EN.sig(value, digits)


def _share(value: Any) -> str:
    return EN.na if value is None else EN.percent(value, 1)


def _signed(value: Any) -> str:
    if value is None:
        return EN.na
    return ("+" if float(value) >= 0 else "") + EN.percent(value, 1)


def _count(value: Any) -> str:
    """A count; one the source could only estimate (not a whole number) is shown as "≈N"."""
    if value is None:
        return EN.na
    if isinstance(value, float) and not value.is_integer():
        return "≈" + EN.integer(value)
    return EN.integer(value)


def _exact(value: Any, none: str = NOT_PUBLISHED) -> str:
    """A catalog number exactly as written (grouped, no padding zeros); None is "not published"."""
    if value is None:
        return none
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)) or type(value).__name__ == "Decimal":
        return EN.plain(value)
    return str(value)


def _name(path: Any) -> str:
    return Path(str(path)).name


# ---------------------------------------------------------------- estimate

TERM_COLUMNS = [Column("term", justify="left"), Column("seconds"), Column("share")]


def render_estimate(result: Result, console: Console) -> None:
    for bid in result["bids"]:
        head = text((str(bid["id"]), "bold"), f": {EN.integer(bid['gpus'])} × {bid['accelerator']} on {bid['network']}")
        if not bid.get("feasible"):
            print_line(console, head, f"; infeasible: {bid.get('reason')}")
            continue
        memory = (bid.get("memory_gib") or {}).get("total")
        pairs = [("step", f"{_seconds(bid['step_time_s'])} s"), ("memory", EN.gib(memory))]
        pairs += [(str(k), _exact(v, EN.na)) for k, v in (bid.get("plan") or {}).items()]
        print_pairs(console, pairs, head=head)
        total = bid["step_time_s"] or None
        rows = [[key, _seconds(value), _share(None if value is None or not total else value / total)]
                for key, value in bid["terms"].items()]
        print_table(console, TERM_COLUMNS, rows)
        print_line(console, _search_line(bid.get("search")), indent=2)
        _render_recipe(bid.get("tuned_recipe"), console)
        _render_run(bid.get("run"), console)
        _render_real_run(bid.get("real_run"), console)


# How far below a tuned recipe's measured step time the search's best may fall before the two plans
# are called out: the search claiming to beat a vendor's tuning by more than the model's own error.
FAR_FROM_RECIPE = 0.9


def _degrees(plan: Mapping[str, Any] | None) -> str:
    """The parallel degrees of a plan: tp, pp and dp always, the others where above 1."""
    if not plan:
        return EN.na
    keys = ("tp", "pp", "dp", "cp", "ep", "vpp")
    return " ".join(f"{k}{plan[k]}" for k in keys if plan.get(k) is not None and (k in keys[:3] or plan[k] > 1))


def _settings(plan: Mapping[str, Any] | None) -> str:
    if not plan:
        return EN.na
    parts = [f"micro-batch {plan.get('micro_batch', 1)}"]
    if plan.get("zero_stage"):
        parts.append(f"ZeRO-{plan['zero_stage']}")
    if plan.get("recompute") not in (None, "none"):
        parts.append(f"{plan['recompute']} recompute")
    return ", ".join(parts)


def _render_recipe(recipe: Result | None, console: Console) -> None:
    """The nearest published tuned recipe and the search's best plan at the recipe's scale, both
    plans spelled out, and a warning where the search claims to beat the recipe by 10% or more."""
    if not recipe:
        return
    ratio = recipe.get("search_to_measured")
    ours, theirs = recipe.get("search_plan_at_recipe_scale"), recipe.get("recipe_plan")
    print_pairs(console, [("tuned recipe", str(recipe["recipe_id"])),
                          ("recipe GPUs", f"{EN.integer(recipe['recipe_gpus'])} × {recipe['recipe_accelerator']}"),
                          ("recipe plan", _degrees(theirs)), ("recipe settings", _settings(theirs)),
                          ("measured step", f"{_seconds(recipe.get('recipe_measured_step_time_s'))} s"),
                          ("model on the recipe", f"{_seconds(recipe.get('recipe_predicted_step_time_s'))} s"),
                          ("search plan", _degrees(ours)), ("search settings", _settings(ours)),
                          ("search step", f"{_seconds(recipe.get('search_step_time_at_recipe_scale_s'))} s "
                                          f"({_ratio(ratio)} of measured)")], indent=2)
    if ratio is not None and ratio < FAR_FROM_RECIPE:
        print_line(console, ("note: ", "bold"), "the search claims to beat this tuned recipe by more than "
                   f"{EN.percent(1 - FAR_FROM_RECIPE)}; compare both plans before relying on it", indent=2)


def _render_run(run: Result | None, console: Console) -> None:
    """Time to train, goodput and GPU-hours: what the quote's costs are made of."""
    if not run:
        return
    goodput = run["goodput"]
    print_pairs(console, [("time to train", f"{EN.sig(run['time_to_train_days'], 3)} days"),
                          ("goodput", EN.percent(goodput["fraction"])),
                          ("GPU-hours", EN.integer(round(run["gpu_hours"])))], indent=2)
    if len(run["phases"]) > 1:
        for phase in run["phases"]:
            print_pairs(console, [("phase", str(phase["name"])), ("step", f"{_seconds(phase['step_time_s'])} s"),
                                  ("days", EN.sig(phase["time_to_train_days"], 3)),
                                  ("GPU-hours", EN.integer(round(phase["gpu_hours"])))], indent=4)


def _render_real_run(real: Result | None, console: Console) -> None:
    """The same run as published whole runs went: they took longer than the model's steps say."""
    if not real:
        return
    print_pairs(console, [("as published runs go", f"{EN.sig(real['time_to_train_days'], 3)} days"),
                          ("GPU-hours", f"{EN.integer(round(real['gpu_hours']))} (P10-P90 "
                                        f"{EN.integer(round(real['p10_gpu_hours']))}-"
                                        f"{EN.integer(round(real['p90_gpu_hours']))})")], indent=2)
    print_line(console, f"published whole pre-training runs took {EN.sig(real['real_run_factor'], 3)} times the "
               f"model's time (median of {EN.integer(real['fit_runs'])} fitted runs, losses apart)", indent=2)


def _search_line(search: Result | None) -> str:
    if not search or search.get("plans_evaluated") is None:
        return "plan given in the bid (no search)"
    line = f"searched {EN.integer(search['plans_evaluated'])} plans ({EN.integer(search.get('feasible'))} feasible)"
    return line + (f" in {EN.sig(search['seconds'], 2)} s" if search.get("seconds") is not None else "")


# ---------------------------------------------------------------- backtest

def _millions(hours: Any) -> str:
    return EN.na if hours is None else EN.sig(hours / 1e6, 3)


def render_whole_backtest(result: Result, console: Console) -> None:
    """Whole runs: published and predicted GPU-hours (millions) with the P10-P90 band, then the
    summaries; the plans are in the JSON."""
    columns = [Column("run", justify="left"), Column("published"), Column("predicted"), Column("P10-P90"),
               Column("ratio"), Column("MFU"), Column("goodput"), Column("run MFU"), Column("published run MFU"),
               Column("in band", justify="left", wrap=True)]
    rows = []
    for run in result["runs"]:
        if run.get("predicted_gpu_hours") is None:
            rows.append([run["id"], _millions(run["published_gpu_hours"]), EN.na, "", "", "", "", "", "",
                         str(run.get("reason") or "")])
            continue
        rows.append([run["id"], _millions(run["published_gpu_hours"]), _millions(run["predicted_gpu_hours"]),
                     f"{_millions(run['p10_gpu_hours'])}-{_millions(run['p90_gpu_hours'])}",
                     EN.sig(run["ratio"], 3), _share(run["mfu"]), _share(run["goodput"]),
                     _share(run.get("run_mfu")), _share(run.get("published_mfu")),
                     "yes" if run["inside_band"] else "no"])
    print_table(console, columns, rows, title=("whole-run backtest, million GPU-hours", "bold"))
    print_line(console, "MFU: the model's, per step; run MFU: over the whole run, every loss included, "
               "as predicted and as the published figure implies")
    summary_columns = [Column("split", justify="left"), Column("family", justify="left"), Column("runs"),
                       Column("MAPE"), Column("median ratio"), Column("signed error"), Column("in band")]
    groups = [(g["split"], g["family"], g) for g in result["groups"]]
    groups += [(split, "all", g) for split, g in result["by_split"].items()]
    lines = [[split, family, EN.integer(g["n"]), _share(g["mape"]), _ratio(g["median_ratio"]), _signed(g["bias"]),
              _share(g["coverage"])] for split, family, g in groups]
    print_table(console, summary_columns, lines, title="by split and family (in band: inside P10-P90)", key=(0, 1))
    _render_source_families(result.get("source_families") or [], console)


def _render_source_families(families: list[dict[str, Any]], console: Console) -> None:
    """How far one source's figures scatter around the model: a spread no shared correction removes."""
    if not families:
        return
    columns = [Column("source family", justify="left"), Column("split", justify="left"), Column("runs"),
               Column("spread"), Column("published run MFU")]
    rows = [[f["source_family"], f["split"], EN.integer(f["n"]), EN.sig(f["log_spread"], 2),
             f"{_share(f['published_mfu_min'])}-{_share(f['published_mfu_max'])}"] for f in families]
    print_table(console, columns, rows, title="within each source family (spread: standard deviation of "
                "ln published/predicted)", key=(0,))


def _ratio(value: Any) -> str:
    return EN.na if value is None else EN.sig(value, 3)


def render_backtest(result: Result, console: Console) -> None:
    if result.get("schema") == "procure.whole-backtest/v1":
        render_whole_backtest(result, console)
        return
    columns = [Column("run", justify="left"), Column("predicted s"), Column("measured s"), Column("error"),
               Column("note", justify="left", wrap=True)]
    rows = [[run["id"], _seconds(run.get("predicted_step_time_s")), _seconds(run.get("measured_step_time_s")),
             _signed(run.get("error")), "" if run.get("predicted_step_time_s") is not None else str(run.get("reason") or "")]
            for run in result["runs"]]
    print_table(console, columns, rows, title=("backtest", "bold"))
    groups = result.get("groups") or []
    if len(groups) > 1:
        group_columns = [Column("split", justify="left"), Column("family", justify="left"), Column("runs"),
                         Column("MAPE"), Column("mean signed error"), Column("in P10-P90")]
        named = [(g["split"], g["family"], g) for g in groups]
        named += [(split, "all", g) for split, g in (result.get("by_split") or {}).items()]
        group_rows = [[split, family, EN.integer(g["n"]), _share(g.get("mape")), _signed(g.get("bias")),
                       _share(g.get("coverage"))] for split, family, g in named]
        print_table(console, group_columns, group_rows, title="by split and evaluation family", key=(0, 1))
    predicted = sum(1 for r in result["runs"] if r.get("predicted_step_time_s") is not None)
    pairs = [("MAPE", EN.percent(result.get("mape"), 2) if result.get("mape") is not None else EN.na)]
    if result.get("bias") is not None:
        pairs.append(("mean signed error", _signed(result["bias"])))
    pairs.append(("over", f"{EN.integer(predicted)} runs"))
    if result.get("spearman") is not None:
        pairs.append(("spearman (within groups)", EN.number(result["spearman"], 2)))
    print_pairs(console, pairs, indent=0)


# ---------------------------------------------------------------- ingest

INGEST_COLUMNS = [Column("source", justify="left"), Column("format", justify="left"), Column("steps"),
                  Column("warm-up"), Column("mean s"), Column("p50 s"), Column("p95 s"), Column("p99 s"),
                  Column("max s"), Column("cv")]


def render_ingest(result: Result, console: Console) -> None:
    rows = []
    for src in result["sources"]:
        st = src.get("step_time_s") or {}
        rows.append([_name(src["path"]), str(src["format"]), _count(src.get("steps")),
                     _count(src.get("warmup_excluded", 0))]
                    + [_seconds(st.get(k)) for k in ("mean", "p50", "p95", "p99", "max")] + [_share(st.get("cv"))])
    print_table(console, INGEST_COLUMNS, rows, title=("measured step times", "bold"))
    for src in result["sources"]:
        name = _name(src["path"])
        for note in src.get("notes") or []:
            print_line(console, (name, "bold"), f": {note}", indent=2)
        strag = src.get("stragglers")
        if strag:
            print_line(console, (name, "bold"), f": {_straggler_text(strag)}", indent=2)
        bw = src.get("bus_bandwidth")
        if bw:
            tables = bw.get("tables") or []
            sizes = sum(len(t.get("rows", [])) for t in tables) if tables and isinstance(tables[0], dict) else 0
            print_line(console, (name, "bold"), f": {bw.get('collective')} bus bandwidth "
                       f"{_seconds(bw.get('large_message_gbs'))} GB/s at large messages ({bw.get('rule')})"
                       + (f"; {sizes} message sizes" if sizes else ""), indent=2)
        if src.get("outliers"):
            print_line(console, (name, "bold"), f": {_outlier_text(src['outliers'])}", indent=2)


LISTED_OUTLIERS = 12


def _straggler_text(strag: dict[str, Any]) -> str:
    """Who is slow: the stragglers with how often they were the slowest, else the slowest ranks."""
    named = strag.get("stragglers") or []
    if named:
        who = "; ".join(f"rank {r['rank']} slowest in {_count(r['times_slowest'])} of {_count(r['steps'])} steps, "
                        f"more than 5% slower than the step's median rank in {_count(r['slow_steps'])}, "
                        f"{_signed(r['slowdown'])} on average" for r in named[:5])
        more = strag.get("straggler_count", len(named)) - min(len(named), 5)
        who += f"; and {more} more" if more > 0 else ""
        head = f"{strag.get('ranks')} ranks; {strag.get('straggler_count', len(named))} straggler(s): {who}"
    else:
        slow = ", ".join(f"rank {r['rank']} ({_seconds(r['mean_s'], 3)} s, {_signed(r['vs_median'])} vs median, "
                         f"slowest in {_count(r['times_slowest'])} steps)" for r in strag.get("slowest_ranks", [])[:3])
        head = f"{strag.get('ranks')} ranks; no stragglers; slowest: {slow}"
    return f"{head}; the slowest rank costs {_share(strag.get('slowest_rank_cost'))} of the step"


def _outlier_text(outliers: list[dict[str, Any]]) -> str:
    steps = ", ".join(f"{'step ' + _count(o['step']) if o.get('step') is not None else 'a step'} "
                      f"({_seconds(o['step_time_s'])} s)" for o in outliers[:LISTED_OUTLIERS])
    more = len(outliers) - LISTED_OUTLIERS
    return f"{len(outliers)} outlier step(s) flagged (kept): {steps}" + (f" and {more} more" if more > 0 else "")


# ---------------------------------------------------------------- catalog

LIST_COLUMNS = {
    "accelerators": [("id", "id"), ("name", "name"), ("vendor", "vendor"), ("bf16_tflops", "bf16 TFLOPS"),
                     ("hbm_gb", "HBM GB"), ("hbm_bw_tbs", "HBM TB/s"), ("tdp_w", "TDP W")],
    "networks": [("id", "id"), ("name", "name"), ("kind", "kind"), ("scale_out_gbps_per_gpu", "Gb/s per GPU"),
                 ("latency_us", "latency µs")],
    "models": [("id", "id"), ("name", "name"), ("layers", "layers"), ("hidden", "hidden"), ("moe", "MoE")],
    "price-books": [("id", "id"), ("provider", "provider"), ("kind", "kind"), ("currency", "currency"),
                    ("effective", "effective"), ("lines", "lines")],
}
FREE_TEXT = ("name", "vendor", "provider")


def render_catalog(result: EntryList | Shown, console: Console) -> None:
    if "entry" in result:
        _render_entry(result, console)
        return
    for kind, rows in result["entries"].items():
        if not rows:
            continue
        spec = LIST_COLUMNS.get(kind) or [(k, k) for k in rows[0]]
        columns = [Column(label, justify="left" if key in FREE_TEXT + ("id", "kind", "currency", "effective") else "right",
                          wrap=key in FREE_TEXT) for key, label in spec]
        print_table(console, columns, [[_exact(row.get(key)) for key, _ in spec] for row in rows], title=(kind, "bold"))


SECTIONS = ("sourced", "notes", "lines")


def _render_entry(result: Shown, console: Console) -> None:
    entry = result["entry"]
    head: list[str | tuple[str, str]] = [(f"{result['kind']} ", "dim"), (str(entry.get("id")), "bold")]
    if entry.get("name") and entry.get("name") != entry.get("id"):
        head.append(f" — {entry['name']}")
    print_line(console, *head)
    if result.get("file"):
        print_line(console, ("file: ", "dim"), str(result["file"]))
    fields = [(key, str(value) if key.endswith("_year") and isinstance(value, int) else _field(value))
              for key, value in sorted(entry.items()) if key not in ("id", "name") + SECTIONS]
    print_stacked(console, [Column(key) for key, _ in fields], [[text(value) for _, value in fields]], key=())
    if entry.get("lines"):
        _render_lines(entry["lines"], console, str(entry.get("currency") or ""))
    _render_sourced(entry.get("sourced") or {}, console, "source")
    if entry.get("notes"):
        print_line(console, ("notes: ", "dim"), str(entry["notes"]))


def _field(value: Any) -> str:
    """A nested mapping on one line ("bf16 989.4, fp8 1,978.9"); None is "not published"."""
    if isinstance(value, dict):
        if not value:
            return "none"
        return ", ".join(f"{k} {_field(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_field(v) for v in value) or "none"
    return _exact(value)


LINE_KEYS = ("accelerator", "term", "price_per_gpu_hour", "min_commit_months", "sku", "region", "capex_per_gpu",
             "network_capex_per_gpu", "life_years", "residual_fraction", "support_per_gpu_year")


MONEY_KEYS = ("price_per_gpu_hour", "capex_per_gpu", "network_capex_per_gpu", "support_per_gpu_year")


def _render_lines(lines: list[Result], console: Console, currency: str) -> None:
    keys = [k for k in LINE_KEYS if any(line.get(k) is not None for line in lines)]
    keys += sorted({k for line in lines for k, v in line.items()
                    if k not in keys and k not in SECTIONS and v is not None and not isinstance(v, (dict, list))})
    columns = [Column(k.replace("_", " ") + (f" ({currency})" if k in MONEY_KEYS and currency else ""),
                      justify="left" if k in ("accelerator", "term", "sku", "region") else "right") for k in keys]
    print_table(console, columns, [[_exact(line.get(k)) for k in keys] for line in lines], title=("lines", "bold"),
                key=(0, 1))
    for line in lines:
        _render_sourced(line.get("sourced") or {}, console, f"source of {line.get('accelerator')} {line.get('term')}")


def _render_sourced(sourced: Result, console: Console, label: str) -> None:
    items = sourced.get("source") or []
    verified = ("verified", "green") if sourced.get("verified") else ("not verified", "yellow")
    print_line(console, (f"{label} ", "dim"), f"(as of {sourced.get('as_of') or EN.na}; ", verified, "):")
    for item in items:
        print_line(console, f"- {item}", indent=2)


# ---------------------------------------------------------------- diff

DIFF_COLUMNS = ("bid", "old", "new", "change")


def render_diff(result: Diff, console: Console) -> None:
    """Input changes beside the result changes they caused; money in the report's format."""
    old, new = result["old"], result["new"]
    f = Formatter("en", str(new.get("currency") or old.get("currency") or "USD"))
    print_line(console, (str(old.get("file") or "old"), "bold"), " → ", (str(new.get("file") or "new"), "bold"))
    for key, word in (("title", "title"), ("as_of", "as of")):
        if old.get(key) != new.get(key):
            print_line(console, f"{word}: {old.get(key)} → {new.get(key)}", indent=2)
    if result["added"] or result["removed"]:
        print_line(console, f"bids added: {', '.join(result['added']) or 'none'}; "
                            f"removed: {', '.join(result['removed']) or 'none'}")
    inputs = [("all bids", c) for c in result.get("inputs") or []]
    inputs += [(bid["id"], c) for bid in result["changed"] for c in bid.get("inputs") or []]
    outcomes = [(bid["id"], c) for bid in result["changed"] for c in bid.get("results") or []]
    for title, label, rows in (("inputs that changed", "input", inputs), ("results that moved", "result", outcomes)):
        if rows:
            columns = [Column("bid", justify="left"), Column(label, justify="left", wrap=True), Column("old"),
                       Column("new"), Column("change")]
            print_table(console, columns, [[bid_id, c["label"], *_diff_values(c, f)] for bid_id, c in rows],
                        title=(title, "bold"), key=(0, 1))
    if not inputs and not outcomes:
        print_line(console, "no input or result changed")
    for bid in result["changed"]:
        moved = [f"+{code}" for code in bid["flags_added"]] + [f"−{code}" for code in bid["flags_removed"]]
        if moved:
            print_line(console, (str(bid["id"]), "bold"), " flags: " + " ".join(moved))
    r = result["ranking"]
    print_line(console, f"ranking {'changed' if r['changed'] else 'unchanged'}: {' > '.join(r['old'])} → "
                        f"{' > '.join(r['new'])}" + ("  (new winner)" if r["winner_changed"] else ""))


def _diff_values(change: Change, f: Formatter) -> list[str]:
    kind = change["kind"]
    currency = change.get("currency")
    old = _diff_value(kind, change["old"], f, currency["old"] if currency else None)
    new = _diff_value(kind, change["new"], f, currency["new"] if currency else None)
    delta, relative = change["delta"], change["relative"]
    if delta is None:
        return [old, new, ""]
    if change["field"] == "rank":
        return [old, new, f"{int(delta):+d}".replace("-", "−")]
    return [old, new, _signed(relative).replace("-", "−") if relative is not None else ""]


def _diff_value(kind: str, value: object, f: Formatter, currency: str | None) -> str:
    if value is None:
        return f.na
    if kind == "money":
        return f.money(value, currency)
    if kind == "rate":
        return f.rate(value, currency)
    if kind == "book_money":
        return f.price(value, currency)
    formats = {"seconds": f.seconds, "days": f.days, "percent": f.percent, "count": f.integer, "number": f.plain}
    return formats[kind](value) if kind in formats and not isinstance(value, str) else str(value)


# ---------------------------------------------------------------- accept

def render_acceptance(result: Result, console: Console) -> None:
    verdict = ("PASS", "bold green") if result["passed"] else ("FAIL", "bold red")
    run = result["run"]
    print_line(console, verdict, f" acceptance of {result['bid']}: {_count(run['steps_measured'])} steps measured "
               f"({run['aggregation']}), {_count(run['warmup_excluded_steps'])} warm-up steps excluded")
    for figure in result["figures"]:
        mark = ("ok  ", "green") if figure["status"] == "pass" else ("FAIL", "red")
        print_line(console, mark, f" {figure['message']}", indent=2)
    if result["slow_ranks"]:
        slow = ", ".join(f"rank {r['rank']} ({_seconds(r['mean_s'], 3)} s, {_signed(r['vs_median'])} vs median, "
                         f"slowest in {r['times_slowest']} of {r['steps']} steps)" for r in result["slow_ranks"][:5])
        print_line(console, ("slow ranks", "bold"), f": {slow}", indent=2)
    if result["outlier_steps"]:
        steps = ", ".join(f"step {_count(o['step']) if o['step'] is not None else '?'} "
                          f"({_seconds(o['step_time_s'], 3)} s)" for o in result["outlier_steps"][:10])
        more = len(result["outlier_steps"]) - 10
        print_line(console, ("outlier steps", "bold"), f": {steps}" + (f" and {more} more" if more > 0 else ""),
                   indent=2)
    if result.get("service_credit_percent"):
        print_line(console, ("service credit", "bold"),
                   f": {result['service_credit_percent']:g}% of the invoice", indent=2)
    for note in result["notes"]:
        print_line(console, ("note", "bold"), f": {note}", indent=2)
