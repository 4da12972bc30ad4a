"""``procure rfq``: the request for quotation and the vendor's response form.

Three files from the workload of a cluster.yaml: ``<slug>-rfq.pdf`` (what is asked, how bids are
evaluated, the acceptance test every commitment faces), ``<slug>-response.xlsx`` (sheet
``Response``: one bid field per row, dotted key in A, the vendor's value in B, unit in C, meaning
and allowed values in D; only B is editable; enumerations carry data validation; a second sheet
lists the catalog's accelerators and networks) and ``<slug>-response.yaml`` (the same fields for
vendors who answer in text). The fields come from ``inputs.form`` (the bid schema itself).
"""

from __future__ import annotations

import io
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from procure.inputs.form import FormField, form_fields

TEXT = {
    "en": {
        "title": "Request for quotation", "key": "Field (cluster.yaml key)", "value": "Your value",
        "unit": "Unit", "meaning": "Meaning and allowed values", "required": "required",
        "choices": "one of", "catalog": "Catalog", "id": "id", "name": "name", "kind": "kind",
        "accelerator": "accelerator", "network": "network",
        "form_note": "Fill in column B only. Required fields are marked. Leave a field empty when it does not apply.",
        "yaml_note": "Answer in text: fill in the values below (delete the lines you leave empty) and send this file back.",
        "workload": "The workload", "deliverables": "What to quote", "evaluation": "How bids are evaluated",
        "acceptance": "The acceptance test", "respond": "How to respond",
        "model": "Model", "params": "Parameters", "seq": "Sequence length", "batch": "Global batch",
        "tokens": "Tokens to train", "precision": "Precision", "deadline": "Deadline", "phases": "Further phases",
        "currency": "Report currency", "as_of": "Prices and FX as of", "basis": "Ranking basis",
        "none": "none",
        "eval_text": ("Every bid is costed from its price and the step time procure predicts for it from first "
                      "principles (or reads from the burn-in logs you send). Bids are ranked on {basis} cost per "
                      "million tokens; a bid that misses the deadline ranks after those that meet it. A committed "
                      "step time faster than physically possible is flagged impossible; one more than 15% below the "
                      "model optimistic; one the model cannot reach in memory infeasible."),
        "accept_text": ("Each commitment becomes a burn-in acceptance test before signature: the job above runs on "
                        "the offered partition; warm-up steps are excluded; the mean and the 99th-percentile step "
                        "time over at least 100 measured steps must not exceed the committed values; a committed "
                        "scaling efficiency is checked between two GPU counts; slow ranks are named. Logs in any "
                        "format procure reads count as evidence."),
        "respond_text": ("Fill in {xlsx} (column B) or {yaml} and return it. Required: {required}. "
                         "Commitments (committed.*) are optional but every one you give is tested."),
    },
    "zh-TW": {
        "title": "報價請求書", "key": "欄位（cluster.yaml 鍵）", "value": "您的數值", "unit": "單位",
        "meaning": "說明與允許值", "required": "必填", "choices": "可選值", "catalog": "型錄", "id": "代號",
        "name": "名稱", "kind": "類別", "accelerator": "加速器", "network": "網路",
        "form_note": "僅填寫 B 欄。必填欄位已標示。不適用的欄位請留空。",
        "yaml_note": "以文字回覆：填寫下列數值（刪除不填的行）後寄回本檔。",
        "workload": "訓練工作", "deliverables": "報價內容", "evaluation": "評選方式", "acceptance": "驗收測試",
        "respond": "回覆方式", "model": "模型", "params": "參數量", "seq": "序列長度", "batch": "全域批次",
        "tokens": "訓練 token 數", "precision": "精度", "deadline": "期限", "phases": "後續階段",
        "currency": "報告幣別", "as_of": "價格與匯率基準日", "basis": "排名基準", "none": "無",
        "eval_text": ("每份報價依其價格，以及 procure 依第一原理預測（或由您提供的燒機紀錄讀取）的步驟時間計算成本。"
                      "依{basis}基準的每百萬 token 成本排名；無法於期限內完成者排在能完成者之後。"
                      "承諾步驟時間快於物理極限者標為不可能；較模型快 15% 以上者標為樂觀；記憶體無法容納者標為不可行。"),
        "accept_text": ("每項承諾在簽約前都會成為燒機驗收測試：上述工作於報價的分區上執行，排除暖機步驟，"
                        "至少 100 個量測步驟的平均與第 99 百分位步驟時間不得超過承諾值；承諾的擴展效率以兩種 GPU "
                        "數量檢驗；並列出較慢的 rank。procure 可讀取的任何紀錄格式皆可作為證據。"),
        "respond_text": "填寫 {xlsx}（B 欄）或 {yaml} 後寄回。必填：{required}。承諾（committed.*）為選填，但填寫者皆會受測。",
    },
}
UNITS_ZH = {"seconds": "秒", "days": "天", "months": "月", "years": "年", "GPUs": "GPU 數", "tokens": "token",
            "sequences": "序列", "fraction 0-1": "比例 0-1", "currency per GPU-hour": "每 GPU 小時金額",
            "currency per GPU": "每 GPU 金額", "currency per node": "每節點金額", "currency": "金額",
            "currency per year": "每年金額", "currency per kWh": "每度電金額", "currency per TB": "每 TB 金額",
            "currency per kW-month": "每 kW 月金額", "currency per GPU per year": "每 GPU 每年金額",
            "date (YYYY-MM-DD)": "日期 (YYYY-MM-DD)", "ratio": "比值", "degree": "並行度", "ranks": "rank 數",
            "layers": "層數", "TB": "TB", "kW per GPU": "每 GPU kW", "ratio ≥ 1": "比值 ≥ 1", "per year": "每年",
            "fraction per year": "每年比例"}

# The meanings of the form's fields in Traditional Chinese; a field missing here (added to the schema
# later) shows its English description.
MEANING_ZH = {
    "id": "此報價的代號（英數字、`.`、`_`、`-`）；留空則取檔名",
    "vendor": "報價廠商名稱（印在報告上）",
    "accelerator": "目錄中的加速器代號（見 Catalog 工作表）",
    "gpus": "提供的加速器數量",
    "network": "目錄中的網路代號；留空則為加速器的預設網路",
    "pricing.kind": "計價方式：rental（租用，按 GPU 小時）或 purchase（購買）",
    "pricing.price_book": "價目表代號（與 term 一起）",
    "pricing.term": "該價目表的方案（on-demand、reserved-1y、purchase…）",
    "pricing.usd_per_gpu_hour": "每 GPU 小時價格（美元），取代價目表",
    "pricing.price_per_gpu_hour": "每 GPU 小時價格（以 currency 計），取代價目表",
    "pricing.currency": "幣別（ISO 4217）",
    "pricing.min_commit_months": "租用：最低計費月數",
    "pricing.discount_fraction": "租用：每 GPU 小時價格的折扣",
    "pricing.prepay_fraction": "租用：簽約時預付的比例",
    "pricing.storage_per_gpu_hour": "租用：每計費 GPU 小時的儲存費",
    "pricing.network_per_gpu_hour": "租用：每計費 GPU 小時的網路費",
    "pricing.support_fraction": "租用：支援費占 GPU 小時金額的比例",
    "pricing.setup_fee": "一次性設定費",
    "pricing.egress_tb": "移出資料量（TB）",
    "pricing.egress_per_tb": "每 TB 移出費用",
    "pricing.capex_per_gpu": "購買：每 GPU 資本支出",
    "pricing.capex_per_node": "購買：每節點額外資本支出",
    "pricing.network_capex_per_gpu": "購買：每 GPU 網路資本支出",
    "pricing.network_capex": "購買：整體網路資本支出",
    "pricing.life_years": "購買：折舊年限",
    "pricing.residual_fraction": "購買：年限末帳面殘值比例",
    "pricing.resale_decline_per_year": "購買：轉售價值每年下降比例",
    "pricing.power_per_kwh": "購買：每度電價",
    "pricing.pue": "購買：機房 PUE（1–3）",
    "pricing.colo_per_kw_month": "購買：每 kW 每月機櫃費用",
    "pricing.kw_per_gpu": "每 GPU 的 IT 功率",
    "pricing.staff_per_year": "購買：每年維運人力成本",
    "pricing.support_per_gpu_year": "購買：每 GPU 每年支援合約",
    "pricing.cost_of_capital": "購買：此報價的年資金成本",
    "committed.step_time_s": "承諾平均 step 時間",
    "committed.p99_step_time_s": "承諾第 99 百分位 step 時間",
    "committed.scaling_efficiency": "承諾擴展效率（此規模每 GPU 吞吐量對小規模參考）",
    "committed.global_batch_tokens": "承諾值量測時的全域批次（tokens）",
    "committed.global_batch": "承諾值量測時的全域批次（序列）",
    "committed.seq_len": "承諾值量測時的序列長度",
    "committed.precision": "承諾值量測時的精度",
    "plan.tp": "張量平行度",
    "plan.pp": "管線平行階段數",
    "plan.dp": "資料平行副本數",
    "plan.cp": "上下文平行度",
    "plan.ep": "專家平行度（MoE）",
    "plan.vpp": "每個 rank 的虛擬管線階段數",
    "plan.micro_batch": "每個 micro-batch 的序列數",
    "plan.zero_stage": "ZeRO 階段",
    "plan.recompute": "激活重算",
    "plan.sequence_parallel": "Megatron 序列平行",
    "plan.tp_comm_overlap": "張量平行通訊與計算重疊",
    "plan.etp": "專家張量平行度（MoE）",
    "plan.a2a_overlap": "專家平行 all-to-all 與計算重疊",
    "plan.moe_dispatcher": "MoE token 分派器",
    "plan.cp_comm": "上下文平行通訊方式",
    "software.stack": "訓練軟體堆疊；留空為廠商主流堆疊",
    "software.version": "該堆疊的版本",
    "software.date": "YYYY-MM 或 YYYY-MM-DD：選此日期前最新版本",
    "lead_time_days": "自 as_of 起到可用的天數",
    "available_from": "可用日期（取代 lead_time_days）",
}


def _choices(f: FormField, catalog: Any) -> tuple[str, ...]:
    if f.key == "accelerator":
        return tuple(sorted(catalog.accelerators))
    if f.key == "network":
        return tuple(sorted(catalog.networks))
    if f.key == "pricing.currency":
        rates = {code for table in getattr(catalog, "fx_tables", ()) for code in table.rates}
        return tuple(sorted(rates | {"USD"}))
    if f.key == "software.stack":
        from procure.catalog.software import STACKS

        return tuple(STACKS)
    return f.choices


def fields_with_choices(catalog: Any) -> list[FormField]:
    from dataclasses import replace

    return [replace(f, choices=_choices(f, catalog)) for f in form_fields()]


def unit_text(unit: str, lang: str) -> str:
    return UNITS_ZH.get(unit, unit) if lang == "zh-TW" else unit


def meaning_text(f: FormField, lang: str) -> str:
    t = TEXT[lang]
    meaning = MEANING_ZH.get(f.key, f.meaning) if lang == "zh-TW" else f.meaning
    parts = [meaning.replace("`", "")] if meaning else []
    if f.choices:
        shown = ", ".join(f.choices[:40]) + (" ..." if len(f.choices) > 40 else "")
        parts.append(f"{t['choices']}: {shown}")
    if f.required:
        parts.insert(0, f"[{t['required']}]")
    return " ".join(parts)


# ------------------------------------------------------------------------------------------- xlsx

def response_xlsx(fields: list[FormField], catalog: Any, lang: str) -> bytes:
    """The vendor's workbook: only column B of the field rows is unlocked; enumerations validated."""
    from openpyxl import Workbook
    from openpyxl.styles import Alignment, Font, Protection
    from openpyxl.worksheet.datavalidation import DataValidation

    t = TEXT[lang]
    book = Workbook()
    sheet = book.active
    sheet.title = "Response"
    sheet.append([t["key"], t["value"], t["unit"], t["meaning"]])
    for cell in sheet[1]:
        cell.font = Font(bold=True)
    lists = _catalog_sheet(book, catalog, t)
    for row, f in enumerate(fields, start=2):
        sheet.append([f.key, None, unit_text(f.unit, lang), meaning_text(f, lang)])
        sheet.cell(row, 2).protection = Protection(locked=False)
        sheet.cell(row, 4).alignment = Alignment(wrap_text=True, vertical="top")
        if f.required:
            sheet.cell(row, 1).font = Font(bold=True)
        formula = lists.get(f.key) or (f'"{",".join(f.choices)}"' if f.choices and len(",".join(f.choices)) < 250 else None)
        if formula:
            rule = DataValidation(type="list", formula1=formula, allow_blank=True)
            sheet.add_data_validation(rule)
            rule.add(sheet.cell(row, 2))
    sheet.column_dimensions["A"].width = 34
    sheet.column_dimensions["B"].width = 24
    sheet.column_dimensions["C"].width = 22
    sheet.column_dimensions["D"].width = 90
    sheet.protection.sheet = True
    sheet.protection.formatCells = False
    book.properties.creator = "procure"
    book.properties.lastModifiedBy = "procure"
    book.properties.created = book.properties.modified = STAMP
    out = io.BytesIO()
    book.save(out)
    return _fixed_dates(out.getvalue())


STAMP = datetime(2000, 1, 1)      # the form's fixed creation stamp: same inputs, same bytes


def _fixed_dates(data: bytes) -> bytes:
    """The same workbook with every zip entry dated alike: same inputs, same bytes."""
    import zipfile

    source, out = zipfile.ZipFile(io.BytesIO(data)), io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0))
            fixed.compress_type = zipfile.ZIP_DEFLATED
            fixed.external_attr = 0o644 << 16
            body = source.read(info.filename)
            if info.filename == "docProps/core.xml":    # openpyxl stamps the save time as modified
                body = re.sub(rb"(<dcterms:modified[^>]*>)[^<]*", rb"\g<1>2000-01-01T00:00:00Z", body)
            target.writestr(fixed, body)
    return out.getvalue()


def _catalog_sheet(book: Any, catalog: Any, t: dict[str, str]) -> dict[str, str]:
    """The catalog's accelerators and networks with their ids; returns list formulas by field key."""
    sheet = book.create_sheet(t["catalog"])
    sheet.append([t["kind"], t["id"], t["name"]])
    accels = sorted(catalog.accelerators.items())
    networks = sorted(catalog.networks.items())
    for ident, accel in accels:
        sheet.append([t["accelerator"], ident, accel.name])
    for ident, network in networks:
        sheet.append([t["network"], ident, network.name])
    sheet.protection.sheet = True
    first, mid = 2, 2 + len(accels)
    name = t["catalog"]
    return {"accelerator": f"'{name}'!$B${first}:$B${mid - 1}",
            "network": f"'{name}'!$B${mid}:$B${mid + len(networks) - 1}"}


# ------------------------------------------------------------------------------------------- yaml

def response_yaml(fields: list[FormField], lang: str) -> bytes:
    """The same form as YAML: every field commented with its unit and meaning, values empty."""
    t = TEXT[lang]
    lines = [f"# {t['yaml_note']}", "# procure response form"]
    groups: dict[str, list[FormField]] = {}
    for f in fields:
        groups.setdefault(f.path[0] if len(f.path) > 1 else "", []).append(f)
    for f in groups.get("", []):
        lines += _yaml_field(f, lang, "")
    for group, members in groups.items():
        if not group:
            continue
        lines.append(f"{group}:")
        for f in members:
            lines += _yaml_field(f, lang, "  ")
    return ("\n".join(lines) + "\n").encode("utf-8")


def _yaml_field(f: FormField, lang: str, indent: str) -> list[str]:
    unit = unit_text(f.unit, lang)
    note = meaning_text(f, lang).replace("\n", " ")
    head = f"{indent}# {unit + ' · ' if unit else ''}{note}"
    return [head[:400], f"{indent}{f.path[-1]}:"]


# ------------------------------------------------------------------------------------------- PDF

def _workload_rows(inputs: Any, t: dict[str, str]) -> list[tuple[str, str]]:
    """The workload as the request states it: label, value (strings the template prints)."""
    from procure.model import param_count

    cluster, w = inputs.cluster, inputs.cluster.workload
    rows = [(t["model"], inputs.arch.name), (t["params"], f"{param_count(inputs.arch) / 1e9:,.1f} B"),
            (t["seq"], f"{w.seq_len:,}"), (t["batch"], f"{w.global_batch_seqs:,} × {w.seq_len:,} = {w.tokens_per_step:,}"),
            (t["tokens"], f"{float(w.train_tokens):,.0f}"), (t["precision"], w.precision),
            (t["deadline"], f"{cluster.deadline_days:g} d" if cluster.deadline_days is not None else t["none"]),
            (t["currency"], cluster.currency)]
    if w.phases:
        rows.append((t["phases"], "; ".join(f"{p.name}: {p.seq_len:,} × {p.global_batch_seqs:,}" for p in w.phases)))
    return rows


# The rows of "What to quote": the required fields, the price, the network and lead time, the commitments.
ASKED = ("pricing.kind", "pricing.price", "pricing.currency", "pricing.capex", "committed.", "network", "lead_time_days")


def request_view(inputs: Any, fields: list[FormField], lang: str, files: tuple[str, str]) -> dict[str, Any]:
    t, cluster = TEXT[lang], inputs.cluster
    required = [f.key for f in fields if f.required]
    return {"t": t, "lang": lang, "title": cluster.title, "as_of": cluster.as_of.isoformat(),
            "workload": _workload_rows(inputs, t),
            "rows": [(f.key, unit_text(f.unit, lang), meaning_text(f, lang)) for f in fields
                     if f.required or f.key.startswith(ASKED)],
            "evaluation": t["eval_text"].format(basis=str(cluster.workload.cost_basis or "commitment")),
            "acceptance": t["accept_text"],
            "respond": t["respond_text"].format(xlsx=files[0], yaml=files[1], required=", ".join(required))}


def request_pdf(view: dict[str, Any], as_of: str, base_dir: Path) -> bytes:
    from procure.report.html_report import make_environment, page_size_css
    from procure.report.pdf_guard import check_fonts
    from procure.report.pdf_report import render_pdf

    env = make_environment(None)
    css = f"@page {{ size: {page_size_css('A4')}; }}"
    html = env.get_template("rfq.html.j2").render(**view, page_css=css)
    check_fonts()          # no usable font: exit 1, not a crash in the layout
    return render_pdf(html, base_dir=base_dir, as_of=as_of)
