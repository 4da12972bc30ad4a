"""The sweep report's view model: the document's numbers as the strings the template prints
(through ``report.formatting``), and the frontier chart of each workload. No arithmetic is left
to the template."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from procure.report.formatting import Formatter
from procure.report.sweep.chart import ChartPoint, frontier_chart
from procure.sweep.document import BestPoint, Plan, SweepDocument, SweepPoint, TermPrice, WorkloadFindings
BASIS_MEANING = {"present_value": "every point's dated cash over its horizon, discounted at the cost of capital",
                 "run": "the economic cost of this job on an amortised cluster",
                 "commitment": "the terms the buyer commits to, costed to the end of the run, undiscounted"}
FAILURE_TEXT = {
    "infeasible": "no plan fits", "price-missing": "no price", "misses-deadline": "misses deadline",
    "over-budget": "over the cash budget", "over-net-cost": "over the net-cost limit", "too-many-gpus": "too many GPUs", "over-power": "over power",
    "power-unknown": "no TDP",
}


def plan_text(plan: Plan | None) -> str:
    if plan is None:
        return "—"
    text = (f"tp{plan.tp} pp{plan.pp} dp{plan.dp} cp{plan.cp} mb{plan.micro_batch}"
            f" ZeRO-{plan.zero_stage} {plan.recompute}")
    if plan.vpp > 1:
        text += f" vpp{plan.vpp}"
    return text + (" SP" if plan.sequence_parallel else "")


class SweepView:
    def __init__(self, doc: SweepDocument):
        self.doc = doc
        self.f = Formatter("en", doc.currency)
        self.points = {p.id: p for p in doc.points}
        self.names = {a.id: a.name for a in doc.accelerators}
        self.colour = {a.id: i for i, a in enumerate(doc.accelerators)}

    def band(self, values: Sequence[Decimal | float] | None, kind: str) -> str:
        if not values:
            return "—"
        fmt = self.f.rate if kind == "cost" else self.f.days
        return f"{fmt(values[0])} – {fmt(values[2])}"

    def meets(self, p: SweepPoint) -> str:
        if p.meets_constraints:
            return "yes"
        by = {"over-budget": p.over_budget_by, "over-net-cost": p.over_net_cost_by}
        return ", ".join(FAILURE_TEXT.get(c, c) + (f" by {self.f.money(by[c])}" if by.get(c) is not None else "")
                         for c in p.constraint_failures)

    def point_row(self, p: SweepPoint, label: str = "") -> dict[str, str]:
        return {
            "label": label, "id": p.id, "accelerator": self.names.get(p.accelerator, p.accelerator),
            "gpus": self.f.integer(p.gpus), "network": p.network,
            "term": p.term.replace("/", "/\u200b"),   # a line may break after the book
            "days": self.f.days(p.time_to_train_days),
            "days_band": self.band(p.band.time_to_train_days if p.band else None, "days"),
            "cost": self.f.money(p.total_cost) if p.total_cost is not None else "—",
            "per_mtok": self.f.rate(p.cost_per_million_tokens) if p.cost_per_million_tokens is not None else "—",
            "per_mtok_band": self.band(p.band.cost_per_million_tokens if p.band else None, "cost"),
            "plan": plan_text(p.plan), "mfu": self.f.percent(p.mfu) if p.mfu is not None else "—",
            "meets": self.meets(p),
        }

    def best_rows(self, best: list[BestPoint], key_name: str) -> list[dict[str, str]]:
        rows = []
        for entry in best:
            key = (self.names.get(entry.key, entry.key) if key_name == "accelerator"
                   else entry.key.replace("/", "/\u200b"))
            if entry.point is None:
                rows.append({"key": key, "missing": "no point meets every constraint"})
            else:
                rows.append({"key": key, "missing": "", **self.point_row(self.points[entry.point])})
        return rows

    def chart(self, findings: WorkloadFindings, deadline: float | None) -> str:
        labels = {pid: str(i + 1) for i, pid in enumerate(findings.frontier)}
        pts = []
        for p in self.doc.points:
            if (p.workload != findings.workload or p.total_cost is None or not p.feasible
                    or p.time_to_train_days is None or p.cost_per_million_tokens is None):
                continue
            days_band = p.band.time_to_train_days if p.band else None
            cost_band = p.band.cost_per_million_tokens if p.band else None
            pts.append(ChartPoint(
                float(p.time_to_train_days), float(p.cost_per_million_tokens),
                self.colour[p.accelerator], labels.get(p.id),
                (float(days_band[0]), float(days_band[2])) if days_band else None,
                (float(cost_band[0]), float(cost_band[2])) if cost_band else None))
        groups = [self.names[a.id] for a in self.doc.accelerators]
        ccy = self.doc.currency
        return frontier_chart(
            pts, groups, self.f.plain, self.f.plain,
            title=f"Time to train and cost of every point of {findings.workload}",
            x_label="Time to train (days, log scale)",
            y_label=f"{ccy} per million tokens (log scale)",
            frontier_label="frontier (P10–P90 whiskers)",
            deadline=(f"deadline {self.f.number(deadline, 0)} d", float(deadline)) if deadline else None,
            left_out=lambda n, cap: (f"{self.f.integer(n)} dearer points, above {self.f.plain(float(f'{cap:.2g}'))} "
                                     f"{ccy} per million tokens, are not drawn (the workbook lists every point)"))

    def workload(self, findings: WorkloadFindings) -> dict[str, Any]:
        w = next(x for x in self.doc.workloads if x.id == findings.workload)
        front = [self.point_row(self.points[pid], str(i + 1)) for i, pid in enumerate(findings.frontier)]
        return {
            "id": w.id,
            "headline": (f"{w.model} ({self.f.compact(w.params)} parameters), sequence "
                         f"{self.f.integer(w.seq_len)}, {self.f.compact(w.train_tokens)} tokens"
                         f"{' in all' if w.phases else ''}, "
                         f"{self.f.integer(w.global_batch_seqs)} sequences per step"
                         + "".join(f", then {p.name} at sequence {self.f.integer(p.seq_len)} "
                                   f"({self.f.compact(p.train_tokens)} tokens)" for p in w.phases)
                         + (f", deadline {self.f.number(w.deadline_days, 0)} days" if w.deadline_days else "")
                         + f"; costs on the {w.cost_basis} basis ({BASIS_MEANING[w.cost_basis]})"),
            "ask": findings.ask.text,
            "counts": (f"{self.f.integer(findings.points)} points: {self.f.integer(findings.feasible)} "
                       f"with a plan that fits, {self.f.integer(findings.costed)} costed, "
                       f"{self.f.integer(findings.meeting_constraints)} meet every constraint, "
                       f"{len(findings.frontier)} on the frontier."),
            "chart": self.chart(findings, w.deadline_days),
            "frontier": front,
            "best_accelerator": self.best_rows(findings.best_per_accelerator, "accelerator"),
            "best_term": self.best_rows(findings.best_per_term, "term"),
        }

    def price_text(self, price: TermPrice) -> str | None:
        if price.capex_per_gpu is not None:
            return f"{self.f.money(price.capex_per_gpu)} capex per GPU"
        if price.price_per_gpu_hour is None:
            return None
        commit = f", {price.min_commit_months} months minimum" if price.min_commit_months else ""
        return f"{self.f.price(price.price_per_gpu_hour)} per GPU-hour{commit}"

    def terms(self) -> list[dict[str, Any]]:
        """One row per term: each accelerator it prices, then those it does not."""
        rows = []
        for term in self.doc.terms:
            priced, missing = [], []
            for price in term.prices:
                text = self.price_text(price)
                name = self.names.get(price.accelerator, price.accelerator)
                if text is None:
                    missing.append(name)
                else:
                    priced.append({"accelerator": name, "price": text})
            rows.append({"id": term.id.replace("/", "/\u200b"), "provider": term.provider,
                         "kind": term.kind, "priced": priced,
                         "missing": ("not priced: " + ", ".join(missing)) if missing else ""})
        return rows

    def inputs(self) -> dict[str, Any]:
        accels = []
        for a in self.doc.accelerators:
            counts = a.gpu_counts
            span = (f"{self.f.integer(counts[0])}–{self.f.integer(counts[-1])} ({len(counts)} counts)"
                    if len(counts) > 1 else self.f.integer(counts[0]))
            accels.append({"name": a.name, "id": a.id, "hbm": f"{self.f.number(a.hbm_gb, 0)} GB",
                           "tdp": f"{self.f.integer(a.tdp_w)} W" if a.tdp_w else "—",
                           "networks": ", ".join(a.networks), "gpus": span})
        c = self.doc.constraints
        constraints = [
            ("Deadline (workloads without their own)", self.f.days(c.deadline_days) if c.deadline_days else "none"),
            ("Budget (peak cash out)", self.f.money(c.budget) if c.budget is not None else "none"),
            ("Net-cost limit (total cost)", self.f.money(c.max_net_cost) if c.max_net_cost is not None else "none"),
            ("Most GPUs", self.f.integer(c.max_gpus) if c.max_gpus else "none"),
            ("Most IT power", f"{self.f.number(c.max_power_mw, 1)} MW" if c.max_power_mw else "none"),
        ]
        return {"accelerators": accels, "constraints": constraints}


def build_view(doc: SweepDocument, page_size: str = "A4") -> dict[str, Any]:
    view = SweepView(doc)
    u = doc.uncertainty
    return {
        "meta": {"title": doc.title, "as_of": str(doc.as_of), "as_of_text": view.f.date(doc.as_of),
                 "generated_by": f"procure {doc.procure_version} · {doc.schema_} · sweep.yaml sha256 {doc.sweep_sha256}"},
        "page_size": "letter" if page_size.lower() == "letter" else "A4",
        "summary": [
            ("Points", f"{view.f.integer(len(doc.points))} ({len(doc.workloads)} workloads × "
                       f"{len(doc.accelerators)} accelerators × GPU counts × {len(doc.terms)} terms)"),
            ("Cost basis", "; ".join(f"{w.id}: {w.cost_basis} ({BASIS_MEANING[w.cost_basis]})"
                                     for w in doc.workloads)),
            ("Currency", doc.currency),
            ("Uncertainty", f"P10–P90 of {view.f.integer(u.samples)} seeded samples (seed {u.seed}), {u.scope}"),
        ],
        "workloads": [view.workload(f) for f in doc.findings],
        "terms": view.terms(),
        "inputs": view.inputs(),
        "distributions": [f"{k}: {v}" for k, v in sorted(u.distributions.items())],
    }
