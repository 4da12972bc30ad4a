"""Terminal views of the commands' JSON-ready results (rich). Formatting only, no arithmetic
beyond unit scaling for display."""

from __future__ import annotations

from pathlib import Path


def _table(title: str, columns: list[str]):
    from rich.table import Table

    table = Table(title=title, title_justify="left", header_style="bold")
    for i, col in enumerate(columns):
        table.add_column(col, justify="left" if i == 0 else "right")
    return table


def _f(value, fmt: str = "{:,.3f}", none: str = "n/a") -> str:
    if value is None:
        return none
    try:
        return fmt.format(float(value))
    except (TypeError, ValueError):
        return str(value)


def render_estimate(result: dict, console) -> None:
    for bid in result["bids"]:
        head = f"{bid['id']}: {bid['gpus']:,} × {bid['accelerator']} on {bid['network']}"
        if not bid.get("feasible"):
            console.print(f"[bold]{head}[/bold]: infeasible: {bid.get('reason')}")
            continue
        plan = bid["plan"]
        console.print(f"[bold]{head}[/bold]  step {_f(bid['step_time_s'])} s   plan "
                      + " ".join(f"{k}={v}" for k, v in plan.items()))
        table = _table("", ["term", "seconds", "share"])
        total = bid["step_time_s"] or 1.0
        for key, value in bid["terms"].items():
            table.add_row(key, _f(value, "{:,.4f}"), _f(value / total if value is not None else None, "{:.1%}"))
        console.print(table)
        search = bid.get("search") or {}
        console.print(f"  memory {_f((bid.get('memory_gib') or {}).get('total'), '{:.1f}')} GiB; "
                      f"searched {search.get('plans_evaluated', 'n/a')} plans "
                      f"({search.get('feasible', 'n/a')} feasible) in {_f(search.get('seconds'), '{:.2f}')} s")


def render_backtest(result: dict, console) -> None:
    table = _table("backtest", ["run", "predicted s", "measured s", "error"])
    for run in result["runs"]:
        pred = run.get("predicted_step_time_s")
        table.add_row(run["id"], _f(pred) if pred is not None else f"— {run.get('reason', '')}",
                      _f(run.get("measured_step_time_s")), _f(run.get("error"), "{:+.1%}"))
    console.print(table)
    groups = result.get("groups") or []
    if len(groups) > 1:
        summary = _table("by split and evaluation family", ["split", "family", "runs", "MAPE", "mean signed error"])
        for g in groups:
            summary.add_row(g["split"], g["family"], str(g["n"]), _f(g.get("mape"), "{:.1%}"),
                            _f(g.get("bias"), "{:+.1%}"))
        for split, g in (result.get("by_split") or {}).items():
            summary.add_row(split, "all", str(g["n"]), _f(g.get("mape"), "{:.1%}"), _f(g.get("bias"), "{:+.1%}"))
        console.print(summary)
    extra = f"   spearman (within groups) {_f(result['spearman'], '{:.2f}')}" if result.get("spearman") is not None else ""
    console.print(f"MAPE {_f(result.get('mape'), '{:.2%}')}, mean signed error {_f(result.get('bias'), '{:+.2%}')} over "
                  f"{sum(1 for r in result['runs'] if r.get('predicted_step_time_s') is not None)} runs{extra}")


def render_ingest(result: dict, console) -> None:
    table = _table("measured step times", ["source", "format", "steps", "warm-up", "mean s", "p50", "p95",
                                           "p99", "max", "cv"])
    for src in result["sources"]:
        st = src.get("step_time_s") or {}
        table.add_row(Path(str(src["path"])).name, src["format"], str(src["steps"]), str(src.get("warmup_excluded", 0)),
                      _f(st.get("mean")), _f(st.get("p50")), _f(st.get("p95")), _f(st.get("p99")),
                      _f(st.get("max")), _f(st.get("cv"), "{:.3f}"))
    console.print(table)
    for src in result["sources"]:
        for note in src.get("notes") or []:
            console.print(f"  {Path(str(src['path'])).name}: {note}")
        strag = src.get("stragglers")
        if strag:
            slow = ", ".join(f"rank {r['rank']} ({r['mean_s']:.2f} s, {r['vs_median']:+.0%} vs median)"
                             for r in strag.get("slowest_ranks", [])[:3])
            console.print(f"  {Path(str(src['path'])).name}: {strag.get('ranks')} ranks; stragglers "
                          f"{strag.get('straggler_ranks') or 'none'}; slowest: {slow}; the slowest rank costs "
                          f"{_f(strag.get('slowest_rank_cost'), '{:.0%}')} of the step")
        bw = src.get("bus_bandwidth")
        if bw:
            tables = bw.get("tables") or []
            sizes = sum(len(t.get("rows", [])) for t in tables) if tables and isinstance(tables[0], dict) else 0
            console.print(f"  {Path(str(src['path'])).name}: {bw.get('collective')} bus bandwidth "
                          f"{_f(bw.get('large_message_gbs'), '{:.1f}')} GB/s at large messages ({bw.get('rule')})"
                          + (f"; {sizes} message sizes" if sizes else ""))
        if src.get("outliers"):
            console.print(f"  {src['path']}: {len(src['outliers'])} outlier step(s) flagged (kept)")


def render_catalog(result: dict, console) -> None:
    if "entry" in result:
        import json

        console.print(f"[bold]{result['kind']}[/bold] {result['entry'].get('id')}  ({result.get('file')})")
        console.print_json(json.dumps(result["entry"], default=str))
        return
    for kind, rows in result["entries"].items():
        if not rows:
            continue
        table = _table(kind, list(rows[0].keys()))
        for row in rows:
            table.add_row(*[_f(v, "{:,.4g}") if isinstance(v, float) else str(v) for v in row.values()])
        console.print(table)


def render_diff(result: dict, console) -> None:
    console.print(f"added: {', '.join(result['added']) or 'none'}; removed: {', '.join(result['removed']) or 'none'}")
    for bid in result["changed"]:
        parts = [f"{k} {_f(v['old'], '{:,.4g}')} → {_f(v['new'], '{:,.4g}')}"
                 + (f" ({v['relative']:+.1%})" if v.get("relative") is not None else "")
                 for k, v in bid["changes"].items()]
        flags = "".join([f" +{f}" for f in bid["flags_added"]] + [f" -{f}" for f in bid["flags_removed"]])
        console.print(f"[bold]{bid['id']}[/bold]: " + "; ".join(parts) + flags)
    r = result["ranking"]
    console.print(f"ranking {'changed' if r['changed'] else 'unchanged'}: {' > '.join(r['old'])} → "
                  f"{' > '.join(r['new'])}" + ("  (new winner)" if r["winner_changed"] else ""))
