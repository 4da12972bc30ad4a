"""Vendors' filled response forms (``procure quote --responses FOLDER``) read as bids.

A response is hostile input like any other. Workbooks (``.xlsx``) are checked as zip archives
before openpyxl opens them (size, member count, uncompressed size, compression ratio), and then
read cell by cell: column A the dotted key, column B the value; a formula, an unknown key, a
merged value cell or a hidden sheet is refused at its cell. YAML responses (``.yaml``/``.yml``)
are a bid mapping, read with positions like cluster.yaml. Every problem of every response is
reported at once (``acme.xlsx: Response!B12: error[...]``, ``acme.yaml:7:3: error[...]``).
"""

from __future__ import annotations

import hashlib
import io
import re
import zipfile
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from pydantic import Field

from procure.errors import Diagnostic, InputError
from procure.inputs.form import FormField, by_key, form_fields, nest
from procure.inputs.schema import Bid
from procure.sources.fields import Strict
from procure.sources.files import read_bytes_limited
from procure.sources.suggest import suggest
from procure.sources.yamlpos import YamlDocument, parse_yaml_text

SHEET = "Response"
SUFFIXES = (".xlsx", ".yaml", ".yml")
MAX_RESPONSES = 1000
MAX_RESPONSE_BYTES = 10 * 1024 * 1024        # a form is a few kB; a workbook this large is not a form
MAX_MEMBERS = 200                             # zip entries of a workbook
MAX_UNCOMPRESSED = 50 * 1024 * 1024           # what openpyxl may inflate
MAX_RATIO = 200                               # inflated / compressed: a zip bomb is far above
MAX_ROWS = 2000                               # rows of the Response sheet read
SLUG_BAD = re.compile(r"[^A-Za-z0-9_.-]+")


class ResponseBids(Strict):
    """One response, read as the bid list of a cluster.yaml fragment (for positions)."""

    bids: list[Bid] = Field(min_length=1, max_length=1)


@dataclass(frozen=True)
class ResponseFile:
    path: Path
    sha256: str
    bytes: int


@dataclass
class Responses:
    bids: list[dict[str, Any]] = field(default_factory=list)     # plain bid mappings, ids set
    files: list[ResponseFile] = field(default_factory=list)
    docs: list[YamlDocument] = field(default_factory=list)        # one per bid: positions for later checks


def response_paths(folder: Path) -> list[Path]:
    """The response files of a folder (not its subfolders). A link is refused, never followed:
    a response is a file the vendor sent, not a pointer to one of the buyer's."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(Diagnostic(str(folder), 0, 0, "not-found", f"responses folder {folder} does not exist"))
    found, problems = [], []
    for entry in sorted(folder.iterdir()):
        if entry.suffix.lower() not in SUFFIXES or entry.name.startswith(("~$", ".")):
            continue
        if entry.is_symlink():
            problems.append(Diagnostic(str(entry), 0, 0, "outside-folder",
                                       "a link; copy the vendor's file into the folder instead"))
        elif entry.is_file():
            found.append(entry)
    if problems:
        raise InputError(problems)
    if len(found) > MAX_RESPONSES:
        raise InputError(Diagnostic(str(folder), 0, 0, "too-large",
                                    f"{len(found)} response files; at most {MAX_RESPONSES} are read"))
    return found


def default_id(path: Path) -> str:
    """The bid id a response gets from its file name (``Acme Cloud.xlsx`` -> ``acme-cloud``)."""
    text = SLUG_BAD.sub("-", path.stem.strip().lower()).strip("-._")
    return (text or "response")[:64]


def read_responses(folder: Path, taken_ids: set[str], cluster_data: dict[str, Any] | None = None,
                   cat: Any = None) -> Responses:
    """Every response of ``folder`` as a bid; InputError listing every problem of every file (the
    schema's and, with ``cat``, the catalog's: an unknown accelerator is reported with a bad price)."""
    out, problems = Responses(), []
    seen = dict.fromkeys(taken_ids, "cluster.yaml")
    for path in response_paths(folder):
        try:
            data = read_bytes_limited(path, str(path), MAX_RESPONSE_BYTES)
            doc = _read_xlsx(path, data) if path.suffix.lower() == ".xlsx" else _read_yaml(path, data)
        except InputError as exc:
            problems.extend(exc.diagnostics)
            continue
        found = (doc.problems if isinstance(doc, CellDocument) else []) or _validate(doc)
        found += _catalog_checks(doc, cluster_data or {}, cat) if cat is not None else []
        bid = doc.data["bids"][0]             # type: ignore[index]
        if bid.get("id") in seen:
            found.append(_at(doc, ("bids", 0, "id"), "duplicate-id",
                             f"bid id {bid['id']!r} is also the id of {seen[bid['id']]}; state another `id`"))
        if found:
            problems.extend(found)
            continue
        seen[bid["id"]] = path.name
        out.bids.append(bid)
        out.docs.append(doc)
        out.files.append(ResponseFile(path, hashlib.sha256(data).hexdigest(), len(data)))
    if problems:
        raise InputError(problems)
    return out


def _validate(doc: YamlDocument) -> list[Diagnostic]:
    from procure.sources.validate import validate_document

    try:
        validate_document(doc, ResponseBids)
    except InputError as exc:
        return [_cellwise(doc, _unprefixed(d)) for d in exc.diagnostics]
    return []


def _unprefixed(d: Diagnostic) -> Diagnostic:
    """Messages name the response's own keys (``pricing.kind``), not the fragment's ``bids[0]``."""
    return Diagnostic(d.source, d.line, d.col, d.code, d.message.replace("`bids[0].", "`").replace("bids[0].", ""),
                      d.severity)


# ------------------------------------------------------------------------------------------- YAML

def _read_yaml(path: Path, data: bytes) -> YamlDocument:
    from procure.sources.files import decode_utf8

    parsed = parse_yaml_text(decode_utf8(data, str(path)), str(path))
    if not isinstance(parsed.data, dict):
        raise InputError(Diagnostic(str(path), 1, 1, "bad-response",
                                    "a response is a mapping of the bid's fields (vendor, accelerator, gpus, pricing, ...)"))
    bid = _drop_empty(dict(parsed.data))
    bid.setdefault("id", default_id(path))
    if "measured" in bid:
        line, col = parsed.key_position(("measured",))
        raise InputError(Diagnostic(str(path), line, col, "unsupported",
                                    "a response cannot name log files; send burn-in logs separately"))
    # the response's own paths, moved under bids[0] (a key's own position keeps its "<key>" mark)
    positions = {(("<key>", "bids", 0) + k[1:]) if k[:1] == ("<key>",) else (("bids", 0) + k): v
                 for k, v in parsed.positions.items()}
    return YamlDocument(str(path), {"bids": [bid]}, positions)


def _drop_empty(mapping: dict[str, Any]) -> dict[str, Any]:
    """The form's keys left empty (``gpus:`` with no value) are fields not given, not nulls."""
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        if isinstance(value, dict):
            value = _drop_empty(value)
            if not value:
                continue
        if value is None:
            continue
        out[key] = value
    return out


# ------------------------------------------------------------------------------------------- xlsx

@dataclass
class CellDocument(YamlDocument):
    """A workbook response: positions are (row, column) of the Response sheet, printed as cells;
    ``rows`` the row of every key of the form (a missing required field names the row to fill);
    ``problems`` what reading the cells found."""

    rows: dict[str, int] = field(default_factory=dict)
    problems: list[Diagnostic] = field(default_factory=list)


def _cell(source: str, row: int, col: int) -> str:
    return f"{source}: {SHEET}!{'AB'[min(col, 2) - 1]}{row}"


MISSING = re.compile(r"`([\w.]+)`")


def _cellwise(doc: YamlDocument, d: Diagnostic) -> Diagnostic:
    if not isinstance(doc, CellDocument) or d.line <= 0:
        return d
    line, col = d.line, d.col
    if d.code == "missing-field":          # name the row to fill, not the top of the sheet
        named = MISSING.search(d.message)
        row = doc.rows.get(named.group(1)) if named else None
        line, col = (row, 2) if row else (line, col)
    return Diagnostic(_cell(doc.source, line, col), 0, 0, d.code, d.message, d.severity)


def _at(doc: YamlDocument, path: tuple[Any, ...], code: str, message: str) -> Diagnostic:
    return _cellwise(doc, doc.diagnostic(path, code, message))


def _check_zip(path: Path, data: bytes) -> None:
    def bad(message: str) -> InputError:
        return InputError(Diagnostic(str(path), 0, 0, "bad-response", message))

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as book:
            members = book.infolist()
    except (zipfile.BadZipFile, ValueError, OSError):
        raise bad("not an Excel workbook (.xlsx is a zip archive; this file is not one)") from None
    if len(members) > MAX_MEMBERS:
        raise bad(f"the workbook has {len(members)} parts; a response form has far fewer")
    inflated = sum(m.file_size for m in members)
    if inflated > MAX_UNCOMPRESSED or inflated > MAX_RATIO * max(len(data), 1):
        raise bad(f"the workbook inflates to {inflated / 1e6:.0f} MB from {len(data) / 1e6:.2f} MB (a zip bomb?); "
                  "a response form is a few kB")


def _read_xlsx(path: Path, data: bytes) -> CellDocument:
    import openpyxl

    _check_zip(path, data)
    source = str(path)
    try:
        book = openpyxl.load_workbook(io.BytesIO(data), data_only=False, keep_links=False)
    except Exception as exc:   # noqa: BLE001 - a malformed workbook raises anything
        raise InputError(Diagnostic(source, 0, 0, "bad-response",
                                    f"cannot read the workbook ({type(exc).__name__}); save it again as .xlsx")) from None
    problems = [Diagnostic(source, 0, 0, "hidden-sheet", f"sheet {ws.title!r} is hidden; a response hides nothing")
                for ws in book.worksheets if ws.sheet_state != "visible"]
    if SHEET not in book.sheetnames:
        raise InputError(problems + [Diagnostic(source, 0, 0, "bad-response",
                                                f"no sheet named {SHEET!r} (sheets: {', '.join(book.sheetnames)}); "
                                                "fill in the form procure rfq wrote")])
    sheet = book[SHEET]
    rows: dict[str, int] = {}
    flat, positions = _rows(sheet, source, problems, rows)
    bid = nest(flat)
    bid.setdefault("id", default_id(path))
    return CellDocument(source, {"bids": [bid]}, positions, rows, problems)


def _rows(sheet: Any, source: str, problems: list[Diagnostic],
          rows: dict[str, int]) -> tuple[dict[str, Any], dict[Any, tuple[int, int]]]:
    fields = by_key(form_fields())
    merged = {(r, c) for rng in sheet.merged_cells.ranges
              for r in range(rng.min_row, rng.max_row + 1) for c in range(rng.min_col, rng.max_col + 1)}
    flat: dict[str, Any] = {}
    positions: dict[Any, tuple[int, int]] = {(): (1, 1), ("bids", 0): (1, 1)}
    if sheet.max_row > MAX_ROWS:
        problems.append(Diagnostic(_cell(source, MAX_ROWS + 1, 1), 0, 0, "too-large",
                                   f"the sheet has {sheet.max_row:,} rows; a response form has under {MAX_ROWS:,}"))
        return flat, positions
    for row in sheet.iter_rows(min_row=2, max_row=min(sheet.max_row, MAX_ROWS), max_col=2):
        key_cell, value_cell = row[0], row[1] if len(row) > 1 else None
        r = key_cell.row
        key = key_cell.value
        value = None if value_cell is None else value_cell.value
        if (r, 2) in merged and value is not None:
            problems.append(Diagnostic(_cell(source, r, 2), 0, 0, "bad-response", "a merged cell; unmerge it"))
            continue
        if key is None or (isinstance(key, str) and not key.strip()):
            if value is not None:
                problems.append(Diagnostic(_cell(source, r, 2), 0, 0, "unknown-key", "a value without a key in column A"))
            continue
        key = str(key).strip()
        form_field = fields.get(key)
        if form_field is None:
            problems.append(Diagnostic(_cell(source, r, 1), 0, 0, "unknown-key",
                                       f"{key!r} is not a field of the form{suggest(key, list(fields))}"))
            continue
        rows.setdefault(key, r)
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        if getattr(value_cell, "data_type", None) == "f" or (isinstance(value, str) and value.lstrip().startswith("=")):
            problems.append(Diagnostic(_cell(source, r, 2), 0, 0, "formula",
                                       "a formula; type the value itself (a response is read, never calculated)"))
            continue
        if key in flat:
            problems.append(Diagnostic(_cell(source, r, 1), 0, 0, "duplicate-key", f"{key!r} is given twice"))
            continue
        flat[key] = _typed(value, form_field)
        path = ("bids", 0) + form_field.path
        positions[path] = (r, 2)
        positions[("<key>",) + path] = (r, 1)
        for depth in range(3, len(path)):
            positions.setdefault(path[:depth], (r, 1))
    return flat, positions


def _typed(value: Any, form_field: FormField) -> Any:
    """A cell's value as cluster.yaml would hold it: money from its text, never via a float."""
    from procure.sources.yamlpos import DecimalText

    if isinstance(value, datetime):
        return value.date() if form_field.kind == "date" else value.isoformat()
    if isinstance(value, date) or isinstance(value, bool):
        return value
    if isinstance(value, float) and form_field.kind == "money":
        return DecimalText(repr(value))
    if isinstance(value, str):
        text = value.strip()
        if form_field.kind in ("integer", "number", "money") and re.fullmatch(r"[-+]?\d[\d_,]*(\.\d*)?([eE][-+]?\d+)?", text):
            clean = text.replace(",", "").replace("_", "")
            if form_field.kind == "integer" and re.fullmatch(r"[-+]?\d+", clean):
                return int(clean)
            return DecimalText(clean)
        if form_field.kind == "yes/no" and text.lower() in ("true", "false", "yes", "no"):
            return text.lower() in ("true", "yes")
        return text
    return value


def _catalog_checks(doc: YamlDocument, cluster_data: dict[str, Any], cat: Any) -> list[Diagnostic]:
    """The catalog checks cluster.yaml's bids get (accelerator, network, price book and term,
    plan, committed batch), on the response's raw fields with its own positions."""
    from procure.inputs.checks import check_commitment, check_hardware, check_plan, check_pricing

    raw_as_of = cluster_data.get("as_of")
    as_of = raw_as_of if isinstance(raw_as_of, date) and not isinstance(raw_as_of, datetime) else None
    bid = doc.data["bids"][0]          # type: ignore[index]
    data = dict(cluster_data, bids=[bid])
    found: list[Diagnostic] = []
    check_hardware(0, bid, doc, cat, found)
    check_pricing(0, bid, data, doc, cat, as_of, found)
    check_plan(0, bid, doc, found)
    check_commitment(0, bid, data, doc, found)
    return [_cellwise(doc, d) for d in found]
