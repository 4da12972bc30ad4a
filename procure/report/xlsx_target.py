"""The workbook's Ratios and Time to target sheets (issue 18), live formulas over other cells.

``Ratios`` computes the committee's ratios from the ``Step time`` sheet's term cells (same row
per bid as every per-bid sheet) and the effective throughput from the step time used, the GPUs
(the named input), the goodput of the ``Bids`` sheet and the token factor of ``Time to target``.
``Time to target`` computes the token factor from the statistical-efficiency law's critical
batch, the equivalent tokens, the days from the effective throughput and the statistical-
efficiency penalty in tokens, days and cost. A figure no formula can rebuild from the workbook's
cells (the tokens per step, the critical batch, the cost at the target tokens alone) is a value
whose source is named in the last column. Definitions: ``procure.economics.ratios``.
"""

from __future__ import annotations

from typing import Any, Protocol

from procure.report.xlsx_cells import FMT, INPUT_FILL, add_table, column_letter, fit_columns, header, money_format, put, put_formula

# as procure.economics.ratios.EXPOSED_COMM_TERMS (renderers read the document, not the economics)
EXPOSED_COMM_TERMS = ("tp_comm_s", "pp_comm_s", "dp_comm_exposed_s", "ep_comm_s", "cp_comm_s")
RATIOS_HEADER = ["Bid", "Bubble ratio", "Communication-to-computation", "Overlap efficiency",
                 "Exposed-communication share", "Effective tokens/s per GPU", "Exposed communication (s)",
                 "Hidden communication (s)", "Tokens per step", "Step time used (s)", "GPUs", "Goodput",
                 "Token factor", "How"]
TARGET_HEADER = ["Bid", "Global batch (tokens)", "Workload batch (tokens)", "Critical batch (tokens)", "Token factor",
                 "Token penalty", "Target tokens", "Equivalent tokens", "Penalty tokens", "Days to target",
                 "Days at target tokens", "Penalty days", "Cost to target", "Cost at target tokens",
                 "Penalty cost", "Source of the values"]
RATIO_HOW = ("bubble ratio = bubble_s / modeled step time; communication-to-computation = (exposed + hidden) / "
             "compute_s; overlap efficiency = hidden / comm_overlappable_s; exposed share = exposed / modeled step "
             "time; effective = tokens per step / step time used / GPUs × goodput / token factor. Tokens per step: "
             "the document's bids[].tokens_per_step.")
TARGET_HOW = ("critical batch: the statistical-efficiency law (methodology) via workload.critical_batch; cost at "
              "target tokens: the bid's costs re-evaluated at the target tokens alone (time_to_target)")
SECONDS_PER_DAY = 86400


class _Names(Protocol):
    def bid(self, bid_id: str, field: str) -> str: ...
    def define(self, name: str, sheet: str, row: int, col: int) -> None: ...


def _terms_present(bid: dict[str, Any]) -> bool:
    modeled = (bid.get("modeled") or {}).get("step_time_s")
    return bool(bid.get("step_time_terms")) and bool(modeled)


def ratios_sheet(ws: Any, bids: list[dict[str, Any]], term_cols: dict[str, int], goodput_col: int,
                 names: _Names) -> None:
    """One row per bid (the row of every per-bid sheet); formulas where the document has a value."""
    header(ws, 1, RATIOS_HEADER)
    st = "'Step time'!"
    for r, bid in enumerate(bids, start=2):
        put(ws, r, 1, bid["id"])
        ratios = bid.get("ratios") or {}
        if _terms_present(bid):
            term = {key: f"{st}{column_letter(col)}{r}" for key, col in term_cols.items()}
            exposed = "+".join(term[k] for k in EXPOSED_COMM_TERMS if k in term) or "0"
            put_formula(ws, r, 7, exposed, FMT["num4"])
            put_formula(ws, r, 8, f"MAX({term['comm_overlappable_s']}-{term['comm_exposed_s']},0)", FMT["num4"])
            modeled = f"{st}B{r}"
            cells = {2: f"{term['bubble_s']}/{modeled}", 3: f"(G{r}+H{r})/{term['compute_s']}",
                     4: f"H{r}/{term['comm_overlappable_s']}", 5: f"G{r}/{modeled}"}
            for col, key in zip((2, 3, 4, 5), ("bubble_ratio", "comm_to_compute", "overlap_efficiency",
                                               "exposed_comm_share")):
                if ratios.get(key) is None:
                    put(ws, r, col, "n/a")
                else:
                    put_formula(ws, r, col, cells[col], FMT["num2"] if key == "comm_to_compute" else FMT["pct"])
        else:
            for col in range(2, 9):
                if col != 6:
                    put(ws, r, col, "n/a")
        put(ws, r, 9, bid.get("tokens_per_step"), FMT["int"], fill=INPUT_FILL)
        put_formula(ws, r, 10, f"{st}C{r}", FMT["num3"])
        put_formula(ws, r, 11, names.bid(bid["id"], "gpus"), FMT["int"])
        put_formula(ws, r, 12, f"'Bids'!{column_letter(goodput_col)}{r}", FMT["pct"])
        put_formula(ws, r, 13, f"'Time to target'!E{r}", "0.0000")
        if ratios.get("effective_tokens_per_s_per_gpu") is None:
            put(ws, r, 6, "n/a")
        else:
            put_formula(ws, r, 6, f"I{r}/J{r}/K{r}*L{r}/M{r}", FMT["num2"])
        put(ws, r, 14, RATIO_HOW if r == 2 else "")
    add_table(ws, "RatiosTable", 1, len(bids) + 1, len(RATIOS_HEADER))
    ws.freeze_panes = "B2"
    fit_columns(ws, maximum=40)


def target_sheet(ws: Any, bids: list[dict[str, Any]], doc: dict[str, Any], names: _Names,
                 cost_rows: dict[str, int], train_tokens_name: str) -> None:
    """Time and cost to the target tokens, the statistical-efficiency penalty in its own columns."""
    header(ws, 1, TARGET_HEADER)
    for r, bid in enumerate(bids, start=2):
        ccy = bid.get("currency") or doc["currency"]
        batch, ttt = bid.get("batch") or {}, bid.get("time_to_target") or {}
        put(ws, r, 1, bid["id"])
        put(ws, r, 2, batch.get("global_batch_tokens") or bid.get("tokens_per_step"), FMT["int"], fill=INPUT_FILL)
        put(ws, r, 3, batch.get("reference_batch_tokens") or bid.get("tokens_per_step"), FMT["int"], fill=INPUT_FILL)
        critical = batch.get("critical_batch_tokens")
        put(ws, r, 4, critical if critical is not None else "n/a", FMT["int"], fill=INPUT_FILL)
        if critical is not None:
            put_formula(ws, r, 5, f"(1+B{r}/D{r})/(1+C{r}/D{r})", "0.0000")
        else:                                  # no law for the family: the factor is the document's
            put(ws, r, 5, batch.get("token_factor", 1.0), "0.0000", fill=INPUT_FILL)
        names.define(names.bid(bid["id"], "token_factor"), ws.title, r, 5)
        put_formula(ws, r, 6, f"E{r}-1", "+0.0%;-0.0%;0.0%")
        put_formula(ws, r, 7, train_tokens_name, FMT["sci"])
        put_formula(ws, r, 8, f"G{r}*E{r}", FMT["sci"])
        put_formula(ws, r, 9, f"H{r}-G{r}", FMT["sci"])
        if ttt and (bid.get("ratios") or {}).get("effective_tokens_per_s_per_gpu") is not None:
            put_formula(ws, r, 10, f"G{r}/('Ratios'!F{r}*'Ratios'!K{r})/{SECONDS_PER_DAY}", FMT["days"])
            put_formula(ws, r, 11, f"J{r}/E{r}", FMT["days"])
            put_formula(ws, r, 12, f"J{r}-K{r}", FMT["days"])
        else:
            for col in (10, 11, 12):
                put(ws, r, col, "n/a")
        _costs(ws, r, bid, ttt, ccy, cost_rows)
        put(ws, r, 16, TARGET_HOW if r == 2 else "")
    add_table(ws, "TimeToTargetTable", 1, len(bids) + 1, len(TARGET_HEADER))
    ws.freeze_panes = "B2"
    fit_columns(ws, maximum=40)


def _costs(ws: Any, r: int, bid: dict[str, Any], ttt: dict[str, Any], ccy: str, cost_rows: dict[str, int]) -> None:
    if not ttt or ttt.get("cost") is None:
        for col in (13, 14, 15):
            put(ws, r, col, "n/a")
        return
    if bid["id"] in cost_rows:                       # the Summary's live total
        put_formula(ws, r, 13, f"'Summary'!H{cost_rows[bid['id']]}", money_format(ccy))
    else:
        put(ws, r, 13, ttt.get("cost"), money_format(ccy), fill=INPUT_FILL)
    put(ws, r, 14, ttt.get("cost_at_target_tokens"), money_format(ccy), fill=INPUT_FILL)
    put_formula(ws, r, 15, f"M{r}-N{r}", money_format(ccy))
