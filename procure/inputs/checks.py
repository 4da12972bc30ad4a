"""Cross-file checks of cluster.yaml against the catalog and price books.

They read the raw YAML data (with type guards), not the validated model, so they also run when
the schema already failed: a mistyped accelerator is reported together with a negative GPU count
and an unknown key, all at once. Each check is a small function that appends diagnostics. A known
term with no line for a bid's accelerator is not an error: the bid gets the ``price-missing``
flag and stays in the comparison.
"""

from __future__ import annotations

import math
import os
import stat
from datetime import date, datetime
from pathlib import Path
from typing import Any

from procure.catalog.load import Catalog
from procure.errors import Diagnostic
from procure.inputs.crossfield import Raw, raw_int
from procure.sources.files import hard_link_problem, kind_of, walk_files, within
from procure.sources.suggest import suggest
from procure.sources.yamlpos import YamlDocument


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def check_workload(data: Raw, doc: YamlDocument, cat: Catalog, out: list[Diagnostic]) -> None:
    workload = data.get("workload")
    given = workload.get("model") if isinstance(workload, dict) else None
    model = given if isinstance(given, str) else None      # '' too: the schema takes it, the catalog has none
    if model is not None and model not in cat.models:
        out.append(doc.diagnostic(("workload", "model"), "unknown-model",
                                  f"model preset {model!r} is not in the catalog{cat.did_you_mean('model', model)}"
                                  " (or give an inline `architecture:`)"))


def check_currency(data: Raw, doc: YamlDocument, cat: Catalog, as_of: date | None, out: list[Diagnostic]) -> None:
    currency = _str(data.get("currency")) or "USD"
    if currency == "USD" or as_of is None:
        return
    fx = cat.fx_for(as_of)
    if fx is None:
        out.append(doc.diagnostic(("as_of",), "no-fx", f"no FX table is dated on or before {as_of}"))
    elif currency not in fx.rates:
        out.append(doc.diagnostic(("currency",), "unknown-currency",
                                  f"currency {currency!r} is not in the FX table of {fx.as_of}"
                                  f"{suggest(currency, fx.rates)}"))


def check_hardware(i: int, bid: Raw, doc: YamlDocument, cat: Catalog, out: list[Diagnostic]) -> None:
    # an empty accelerator is text the schema accepts and the catalog does not hold: unknown, like any other
    given = bid.get("accelerator")
    accel, network = (given if isinstance(given, str) else None), _str(bid.get("network"))
    if accel is not None and accel not in cat.accelerators:
        out.append(doc.diagnostic(("bids", i, "accelerator"), "unknown-accelerator",
                                  f"{accel!r} is not in the catalog{cat.did_you_mean('accelerator', accel)}"))
    elif accel is not None and network is None and "network" not in bid \
            and cat.accelerators[accel].default_network is None:
        out.append(doc.diagnostic(("bids", i), "missing-network",
                                  f"bid {bid.get('id')!r} names no `network` and {accel} has no default"))
    if network is not None and network not in cat.networks:
        out.append(doc.diagnostic(("bids", i, "network"), "unknown-network",
                                  f"{network!r} is not in the catalog{cat.did_you_mean('network', network)}"))


def check_pricing(i: int, bid: Raw, data: Raw, doc: YamlDocument, cat: Catalog, as_of: date | None,
                  out: list[Diagnostic]) -> None:
    pricing = bid.get("pricing")
    if not isinstance(pricing, dict):
        return
    currency = _str(data.get("currency")) or "USD"
    fx = cat.fx_for(as_of) if as_of else None
    where = ("bids", i, "pricing")
    named = pricing.get("price_book")
    book_id = named if isinstance(named, str) else None    # '' is a name no book has, not "no book"
    if book_id is None:
        inline_ccy = _str(pricing.get("currency"))
        if inline_ccy and inline_ccy != currency and (fx is None or inline_ccy not in fx.rates):
            out.append(doc.diagnostic(where + ("currency",), "unknown-currency",
                                      f"no FX rate for {inline_ccy!r} on or before {as_of}"))
        return
    book = cat.price_books.get(book_id)
    if book is None:
        mine = " or in your `price_books:` folders" if cat.user_price_books else ""
        out.append(doc.diagnostic(where + ("price_book",), "unknown-price-book",
                                  f"price book {book_id!r} is not shipped{mine}"
                                  f"{cat.did_you_mean('price book', book_id)}"))
        return
    kind = _str(pricing.get("kind")) or "rental"
    if kind in ("rental", "purchase") and book.kind != kind:
        out.append(doc.diagnostic(where + ("price_book",), "kind-mismatch",
                                  f"price book {book.id!r} is a {book.kind} book but the bid says kind: {kind}"))
    if as_of is not None and book.effective > as_of:
        out.append(doc.diagnostic(where + ("price_book",), "price-book-future",
                                  f"price book {book.id!r} takes effect {book.effective}, after as_of {as_of}; "
                                  "pick an older book or a later as_of"))
    term = _str(pricing.get("term"))
    terms = sorted({line.term for line in book.lines})
    if term is not None and term not in terms:
        out.append(doc.diagnostic(where + ("term",), "unknown-term",
                                  f"price book {book.id!r} has no term {term!r}{suggest(term, terms)} "
                                  f"(terms: {', '.join(terms)})"))
    if book.currency != currency and (fx is None or book.currency not in fx.rates or currency not in fx.rates):
        out.append(doc.diagnostic(where + ("price_book",), "unknown-currency",
                                  f"no FX rate to convert {book.currency} to {currency} on {as_of}"))
    inline_ccy = _str(pricing.get("currency"))
    if inline_ccy and inline_ccy != currency and (fx is None or inline_ccy not in fx.rates):
        out.append(doc.diagnostic(where + ("currency",), "unknown-currency",
                                  f"no FX rate for {inline_ccy!r} on or before {as_of}"))


def resolve_folder(path_text: str, base: Path, allowed: list[Path]) -> Path:
    """A folder named in cluster.yaml, relative to its folder; raise if missing or not allowed."""
    candidate = Path(path_text).expanduser()
    resolved = (candidate if candidate.is_absolute() else base / candidate).resolve()
    if not any(resolved == root or root in resolved.parents for root in allowed):
        roots = ", ".join(str(r) for r in allowed)
        raise PermissionError(f"{path_text!r} resolves to {resolved}, outside the allowed folders ({roots}); "
                              "pass --allow-path to permit it")
    if not resolved.is_dir():
        raise FileNotFoundError(f"price-book folder {path_text!r} does not exist ({resolved})")
    return resolved


def price_book_folders(doc: YamlDocument, base: Path, allowed: list[Path],
                       out: list[Diagnostic]) -> list[Path]:
    """The `price_books:` folders of cluster.yaml that exist and are allowed; problems to ``out``."""
    data = doc.data if isinstance(doc.data, dict) else {}
    listed = data.get("price_books")
    folders = []
    for j, text in enumerate(listed if isinstance(listed, list) else []):
        if not _str(text):
            continue
        try:
            folders.append(resolve_folder(text, base, allowed))
        except FileNotFoundError as exc:
            out.append(doc.diagnostic(("price_books", j), "not-found", str(exc)))
        except PermissionError as exc:
            out.append(doc.diagnostic(("price_books", j), "path-not-allowed", str(exc)))
        except (OSError, ValueError, RuntimeError) as exc:
            out.append(doc.diagnostic(("price_books", j), "bad-path",
                                      f"price-book folder {text[:80]!r} is not a usable path: "
                                      f"{getattr(exc, 'strerror', None) or exc}"))
    return folders


def check_plan(i: int, bid: Raw, doc: YamlDocument, out: list[Diagnostic]) -> None:
    plan, gpus = bid.get("plan"), raw_int(bid.get("gpus"))
    if not isinstance(plan, dict) or gpus is None or gpus <= 0:
        return
    parts = [raw_int(plan.get(k)) for k in ("tp", "pp", "dp")] + [raw_int(plan.get("cp", 1))]
    sizes = [p for p in parts if p is not None and p > 0]
    if len(sizes) == len(parts):
        product = math.prod(sizes)
        if product != gpus:
            out.append(doc.diagnostic(("bids", i, "plan"), "plan-mismatch",
                                      f"tp×pp×dp×cp = {product} but the bid has {gpus} GPUs"))


MAX_PATH_CHARS = 4096               # PATH_MAX: a longer text is refused before touching the disk
MAX_FILES_PER_FOLDER = 100_000      # a `measured:` folder with more files is refused, not walked to the end


class MeasuredProblem(ValueError):
    """One `measured:` entry that cannot be used: ``code`` is the diagnostic code."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 80 else repr(text[:60] + "...") + f" ({len(text):,} characters)"


def resolve_measured(path_text: str, base: Path, allowed: list[Path]) -> Path:
    """The measured-log path relative to the cluster.yaml folder, resolved (symlinks followed);
    MeasuredProblem when it is too long, missing, outside the allowed folders or not a file/folder."""
    if len(path_text) > MAX_PATH_CHARS or "\0" in path_text:
        raise MeasuredProblem("bad-path", f"measured log {_shown(path_text)} is not a usable path "
                                          f"(longer than {MAX_PATH_CHARS} characters or holds a NUL byte)")
    try:
        candidate = Path(path_text).expanduser()
        resolved = os.path.realpath(candidate if candidate.is_absolute() else base / candidate)
    except (OSError, ValueError, RuntimeError) as exc:   # ~nosuchuser, a symlink loop
        raise MeasuredProblem("bad-path", f"measured log {_shown(path_text)} is not a usable path: "
                                          f"{getattr(exc, 'strerror', None) or exc}") from None
    roots = [str(r) for r in allowed]
    if not within(resolved, roots):
        raise MeasuredProblem("path-not-allowed",
                              f"{_shown(path_text)} resolves to {resolved}, outside the allowed folders "
                              f"({', '.join(roots)}); pass --allow-path to permit it")
    try:
        mode = os.stat(resolved).st_mode
    except FileNotFoundError:
        raise MeasuredProblem("not-found", f"measured log {_shown(path_text)} does not exist ({resolved})") from None
    except OSError as exc:
        raise MeasuredProblem("bad-path", f"measured log {_shown(path_text)} is not a usable path: "
                                          f"{exc.strerror or exc}") from None
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise MeasuredProblem("not-a-file", f"measured log {_shown(path_text)} is {kind_of(mode)}, "
                                            "not a regular file or a folder")
    return Path(resolved)


def measured_files(path_text: str, base: Path, allowed: list[Path]) -> list[Path]:
    """The files one `measured:` entry stands for: the file itself, or every regular file in the folder
    and its subfolders (sorted; hidden ones skipped), each resolved and confined to the allowed folders
    (a symbolic link inside the folder that leads out of them is refused, never followed)."""
    top = resolve_measured(path_text, base, allowed)
    if not top.is_dir():
        try:
            linked = hard_link_problem(os.stat(top))
        except OSError:
            linked = None          # reported where the file is read
        if linked:
            raise MeasuredProblem("path-not-allowed", f"measured file {_shown(path_text)} is {linked}")
        return [top]
    try:
        files, refused = walk_files(str(top), [str(r) for r in allowed], MAX_FILES_PER_FOLDER, single_name=True)
    except OverflowError:
        raise MeasuredProblem("too-large", f"measured folder {_shown(path_text)} holds more than "
                                           f"{MAX_FILES_PER_FOLDER:,} files") from None
    except OSError as exc:
        raise MeasuredProblem("bad-path", f"cannot list measured folder {_shown(path_text)}: "
                                          f"{exc.strerror or exc}") from None
    if refused:
        where, outside, why = refused[0]
        code = "path-not-allowed" if outside else "not-a-file"
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        hint = "; remove it or pass --allow-path" if code == "path-not-allowed" and "hard link" not in why else ""
        raise MeasuredProblem(code, f"{where} in measured folder {_shown(path_text)} is {why}{more}{hint}")
    return [Path(f) for f in files]


def expand_measured(texts: list[str], base: Path, allowed: list[Path]) -> tuple[Path, ...]:
    """Every file a bid's `measured:` list stands for, each once (duplicates and overlapping folders
    are read once), in the order first named. Raises MeasuredProblem (check_measured reports them all)."""
    found: dict[Path, None] = {}
    cache: dict[str, list[Path]] = {}
    for text in texts:
        if text not in cache:
            cache[text] = measured_files(text, base, allowed)
            found.update(dict.fromkeys(cache[text]))
    return tuple(found)


def check_measured(i: int, bid: Raw, doc: YamlDocument, base: Path, allowed: list[Path],
                   out: list[Diagnostic]) -> None:
    measured = bid.get("measured")
    seen: set[str] = set()
    for j, text in enumerate(measured if isinstance(measured, list) else []):
        if not _str(text) or text in seen:
            continue
        seen.add(text)
        try:
            measured_files(text, base, allowed)
        except MeasuredProblem as exc:
            out.append(doc.diagnostic(("bids", i, "measured", j), exc.code, str(exc)))


def check_commitment(i: int, bid: dict[str, Any], data: dict[str, Any], doc: YamlDocument, out: list[Diagnostic]) -> None:
    """A commitment's batch in tokens is a whole number of its sequences (its own length, else the
    workload's), as the workload's batch must be."""
    committed = bid.get("committed")
    workload = data.get("workload")
    if not isinstance(committed, dict):
        return
    tokens = raw_int(committed.get("global_batch_tokens"))
    seq_len = raw_int(committed.get("seq_len")) or (raw_int(workload.get("seq_len")) if isinstance(workload, dict) else None)
    if tokens is not None and seq_len and tokens > 0 and seq_len > 0 and tokens % seq_len:
        out.append(doc.diagnostic(("bids", i, "committed", "global_batch_tokens"), "bad-batch",
                                  f"committed global_batch_tokens {tokens:,} is not a multiple of the sequence "
                                  f"length {seq_len:,} (give `seq_len` when the vendor measured another)"))


def check_cluster(doc: YamlDocument, cat: Catalog, base: Path, allowed: list[Path]) -> list[Diagnostic]:
    data = doc.data if isinstance(doc.data, dict) else {}
    raw_as_of = data.get("as_of")   # a datetime is a date too, but the schema refuses it: no FX look-up
    as_of = raw_as_of if isinstance(raw_as_of, date) and not isinstance(raw_as_of, datetime) else None
    out: list[Diagnostic] = []
    check_workload(data, doc, cat, out)
    check_currency(data, doc, cat, as_of, out)
    bids = data.get("bids")
    for i, bid in enumerate(bids if isinstance(bids, list) else []):
        if not isinstance(bid, dict):
            continue
        check_hardware(i, bid, doc, cat, out)
        check_pricing(i, bid, data, doc, cat, as_of, out)
        check_plan(i, bid, doc, out)
        check_measured(i, bid, doc, base, allowed, out)
        check_commitment(i, bid, data, doc, out)
    return out
