"""The only module of procure.measure that touches the file system.

It lists folders, reads text (plain or gzip) and opens tables (Parquet, CSV) with size limits,
and hands text, bytes or tables to the pure parsers. Non-UTF-8 text is a LogError naming the
file and the byte offset of the first bad byte.
"""

from __future__ import annotations

import gzip
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from procure.measure.errors import LogError

TABLE_SUFFIXES = (".parquet", ".pq", ".csv", ".csv.gz", ".tsv")
HEAD_BYTES = 1 << 20  # detection looks at the first MiB (decompressed)


@dataclass(frozen=True)
class Limits:
    """Input size limits; raise them for exceptionally large logs or tables."""

    text_bytes: int = 200 * 1024 * 1024   # decompressed size of one text log or trace
    table_bytes: int = 2 * 1024 ** 3      # on-disk size of one Parquet/CSV table


DEFAULT_LIMITS = Limits()


def expand(paths: list[str | Path]) -> tuple[list[Path], list[str]]:
    """Files to read: files as given, folders recursively (sorted, hidden files skipped).

    Returns the files and a list of problems (missing paths) as messages.
    """
    files: list[Path] = []
    missing: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(p for p in sorted(path.rglob("*"))
                         if p.is_file() and not _hidden(p.relative_to(path)))
        elif path.is_file():
            files.append(path)
        else:
            missing.append(f"{path}: no such file or folder")
    return files, missing


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)


def is_table(path: Path) -> bool:
    name = path.name.lower()
    return name.endswith(TABLE_SUFFIXES)


def _is_gzip(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(2) == b"\x1f\x8b"


def read_head(path: Path, size: int = HEAD_BYTES) -> bytes:
    """The first ``size`` bytes (decompressed for gzip) for format detection."""
    try:
        if _is_gzip(path):
            with gzip.open(path, "rb") as handle:
                return handle.read(size)
        with path.open("rb") as handle:
            return handle.read(size)
    except (OSError, EOFError, zlib.error) as exc:
        raise LogError(f"{path}: cannot read ({exc})") from exc


def read_bytes(path: Path, limits: Limits = DEFAULT_LIMITS) -> bytes:
    """The whole file (decompressed for gzip), refusing more than ``limits.text_bytes``."""
    try:
        if _is_gzip(path):
            with gzip.open(path, "rb") as handle:
                data = handle.read(limits.text_bytes + 1)
        else:
            if path.stat().st_size > limits.text_bytes:
                _too_large(path, limits.text_bytes)
            data = path.read_bytes()
    except (OSError, EOFError, zlib.error) as exc:
        raise LogError(f"{path}: cannot read ({exc})") from exc
    if len(data) > limits.text_bytes:
        _too_large(path, limits.text_bytes)
    return data


def _too_large(path: Path, limit: int) -> None:
    raise LogError(f"{path}: larger than the {limit / 2**20:.0f} MiB limit for one log; "
                   "split it or raise the limit (procure.measure.readers.Limits)")


def decode(data: bytes, source: str) -> str:
    """UTF-8 text (a BOM is dropped); invalid bytes are a LogError with the byte offset."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad = data[exc.start:exc.start + 1].hex()
        raise LogError(f"{source}: not UTF-8 text (byte 0x{bad} at offset {exc.start}); "
                       "convert it with iconv -t UTF-8") from exc


def read_text(path: Path, limits: Limits = DEFAULT_LIMITS) -> str:
    return decode(read_bytes(path, limits), str(path))


def table_columns(path: Path, limits: Limits = DEFAULT_LIMITS) -> list[str]:
    """Column names of a Parquet or CSV table without reading its rows."""
    _check_table_size(path, limits)
    try:
        if _is_parquet(path):
            import pyarrow.parquet as pq

            return list(pq.read_schema(path).names)
        import pyarrow.csv as pcsv

        with pcsv.open_csv(path, parse_options=_csv_parse(path)) as reader:
            return list(reader.schema.names)
    except LogError:
        raise
    except Exception as exc:  # pyarrow raises many types for corrupt files
        raise LogError(f"{path}: cannot read table ({exc})") from exc


def read_table(path: Path, columns: list[str], limits: Limits = DEFAULT_LIMITS) -> Any:
    """A pyarrow Table with only ``columns`` (multithreaded readers)."""
    _check_table_size(path, limits)
    try:
        if _is_parquet(path):
            import pyarrow.parquet as pq

            return pq.read_table(path, columns=columns)
        import pyarrow.csv as pcsv

        return pcsv.read_csv(path, parse_options=_csv_parse(path),
                             convert_options=pcsv.ConvertOptions(include_columns=columns))
    except Exception as exc:
        raise LogError(f"{path}: cannot read table ({exc})") from exc


def dask_table(path: Path, columns: list[str], limits: Limits = DEFAULT_LIMITS) -> Any:
    """A lazy dask DataFrame over the table's partitions (row groups / CSV blocks)."""
    _check_table_size(path, limits)
    import dask.dataframe as dd

    if _is_parquet(path):
        return dd.read_parquet(str(path), columns=columns, split_row_groups=True)
    sep = "\t" if path.name.lower().endswith(".tsv") else ","
    compression = "gzip" if path.name.lower().endswith(".gz") else None
    # text columns: cells are coerced to numbers per partition, like the in-process reader
    return dd.read_csv(str(path), usecols=columns, sep=sep, compression=compression,
                       blocksize=None if compression else "64MB", dtype=str,
                       keep_default_na=False)


def _check_table_size(path: Path, limits: Limits) -> None:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise LogError(f"{path}: cannot read ({exc})") from exc
    if size > limits.table_bytes:
        raise LogError(f"{path}: larger than the {limits.table_bytes / 2**30:.1f} GiB limit "
                       "for one table; split it or use a dask scheduler with a raised limit")


def _is_parquet(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(4) == b"PAR1"


def _csv_parse(path: Path) -> Any:
    import pyarrow.csv as pcsv

    return pcsv.ParseOptions(delimiter="\t" if path.name.lower().endswith(".tsv") else ",")
