"""The only module of procure.measure that touches the file system.

It lists folders, reads text (plain or gzip) and opens tables (Parquet, CSV) with limits, and
hands text, bytes or tables to the pure parsers. Non-UTF-8 text is a LogError naming the file
and the byte offset of the first bad byte.

Every limit is checked before the expensive step it guards, so a hostile file is refused
within a second or two and a few hundred MB (see ``Limits``):

- only regular files are opened (a named pipe or a device would block or never end);
- gzip is inflated in chunks and refused once it expands more than ``expansion_ratio`` times
  the compressed bytes read so far (past a floor, so small files always pass): a 200 KB
  bomb stops after a few MB, not after 200 MiB;
- a Parquet file's row count is checked against its size before any row is decoded;
- text is checked for parse bombs before it is split or parsed: too many lines or JSON
  containers for its size (each becomes a Python object far larger than its bytes).
"""

from __future__ import annotations

import io
import os
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Callable, Iterator, NoReturn

from procure.measure.errors import LogError
from procure.measure.formats import JSON_FORMATS
from procure.sources import once
from procure.sources.files import NotRegular, kind_of, open_regular, read_fd_limited, walk_files

TABLE_SUFFIXES = (".parquet", ".pq", ".csv", ".csv.gz", ".tsv")
HEAD_BYTES = 1 << 20  # detection looks at the first MiB (decompressed)
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Limits:
    """Input limits; raise them for exceptionally large logs or tables.

    - ``text_bytes``: decompressed size of one text log or trace;
    - ``table_bytes``: size of one Parquet/CSV table on disk (and of a .csv.gz inflated);
    - ``expansion_ratio`` / ``expansion_floor_bytes``: how far gzip may inflate (real logs and
      traces compress 5-20x; a bomb ~1000x) and how far a Parquet file's rows may exceed its
      size once decoded (real tables 1-5x);
    - ``min_bytes_per_line`` / ``min_bytes_per_container``: below these averages a text is a parse
      bomb (a one-byte line or an empty ``{}`` costs a hundred bytes of Python objects);
    - ``max_lines``: lines in one text log or trace, whatever its bytes (each line becomes a
      Python string and a line record, ~200 bytes: 2 M lines stay within ~400 MB);
    - ``max_rows`` / ``max_row_groups``: rows and Parquet row groups of one table read in-process
      (counted from the Parquet metadata before any row is decoded, and batch by batch while a
      CSV streams); a larger table is read with a dask scheduler (``--scheduler``);
    - ``max_files``: files in one folder.
    """

    text_bytes: int = 200 * 1024 * 1024
    table_bytes: int = 2 * 1024 ** 3
    expansion_ratio: float = 100.0
    expansion_floor_bytes: int = 16 * 1024 * 1024
    min_bytes_per_line: int = 8
    min_bytes_per_container: int = 16
    budget_floor: int = 100_000            # lines or containers always allowed
    max_lines: int = 2_000_000
    max_rows: int = 10_000_000
    max_row_groups: int = 100_000
    max_files: int = 100_000


DEFAULT_LIMITS = Limits()


def expand(paths: list[str | Path], max_files: int = DEFAULT_LIMITS.max_files
           ) -> tuple[list[Path], list[str], list[dict[str, str]]]:
    """Files to read: files as given, folders recursively (sorted, hidden files skipped).

    Returns the files (each once), problems with the paths given (missing, a pipe) as messages,
    and entries of folders that were skipped with the reason: links that lead out of the folder
    (never followed), pipes and devices.
    """
    files: dict[Path, None] = {}
    problems: list[str] = []
    skipped: list[dict[str, str]] = []
    for raw in paths:
        path = Path(raw)
        try:
            mode = os.stat(path).st_mode
        except (OSError, ValueError):
            problems.append(f"{path}: no such file or folder")
            continue
        if stat.S_ISDIR(mode):
            problems += _expand_folder(path, files, skipped, max_files)
        elif stat.S_ISREG(mode):
            files[path] = None
        else:
            problems.append(f"{path}: {kind_of(mode)}, not a regular file")
    return list(files), problems, skipped


def _expand_folder(path: Path, files: dict[Path, None], skipped: list[dict[str, str]],
                   max_files: int) -> list[str]:
    real = os.path.realpath(path)
    try:
        found, refused = walk_files(str(path), [real], max_files)
    except OverflowError as exc:
        return [f"{exc}; ingest its subfolders separately"]
    except OSError as exc:
        return [f"{path}: cannot list ({exc.strerror or exc})"]
    for name in found:   # shown under the folder as given, not its resolved location
        files[Path(path) / os.path.relpath(name, real)] = None
    skipped += [{"path": where, "reason": why.replace("the allowed folders", "the folder")}
                for where, _outside, why in refused]
    return []


def is_table(path: Path) -> bool:
    name = path.name.lower()
    return name.endswith(TABLE_SUFFIXES)


def _open(path: Path) -> int:
    try:
        return open_regular(path)
    except NotRegular as exc:
        raise LogError(f"{path}: {exc.strerror}") from None
    except OSError as exc:
        raise LogError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _inflate(fd: int | Callable[[int], bytes], first: bytes, limit: int, limits: Limits, source: Path,
             truncate: bool = False) -> bytes:
    """gzip members from ``first`` + the rest of ``fd``, at most ``limit`` bytes out.

    Refuses output past ``expansion_ratio`` x the compressed bytes read (beyond the floor),
    checked as it goes, so a bomb costs a few MB; ``truncate`` returns the first ``limit``
    bytes instead of refusing (detection reads only a head).
    """
    read = (lambda n: os.read(fd, n)) if isinstance(fd, int) else fd   # a descriptor, or kept bytes
    out = bytearray()
    consumed = 0
    inflater = zlib.decompressobj(wbits=31)
    pending = first
    while True:
        if not pending:
            pending = read(_CHUNK)
            if not pending:
                break
        consumed += len(pending)
        data, pending = pending, b""
        while data:
            out += inflater.decompress(data, _CHUNK)
            if len(out) > limit:
                if truncate:
                    return bytes(out[:limit])
                _too_large(source, limit)
            if len(out) > limits.expansion_floor_bytes and len(out) > limits.expansion_ratio * consumed:
                raise LogError(f"{source}: a decompression bomb: {consumed:,} compressed bytes inflate "
                               f"to more than {len(out):,} (over {limits.expansion_ratio:g}x); refused")
            if inflater.eof:
                data = inflater.unused_data
                if data and not data.startswith(b"\x1f\x8b"):
                    if data.strip(b"\0"):
                        raise LogError(f"{source}: cannot read (trailing bytes after the gzip data)")
                    data = b""
                inflater = zlib.decompressobj(wbits=31) if data else inflater
            else:
                data = inflater.unconsumed_tail
    if not inflater.eof and not truncate:
        raise LogError(f"{source}: cannot read (the gzip data ends early: a truncated file)")
    return bytes(out)


@contextmanager
def _reading(path: Path) -> Iterator[int]:
    """An open descriptor of ``path``; a read or gzip fault becomes a LogError naming the file."""
    fd = _open(path)
    try:
        yield fd
    except zlib.error as exc:
        raise LogError(f"{path}: cannot read (not valid gzip: {exc})") from exc
    except OSError as exc:
        raise LogError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    finally:
        os.close(fd)


def read_head(path: Path, size: int = HEAD_BYTES) -> bytes:
    """The first ``size`` bytes (decompressed for gzip) for format detection.

    Within a command's read-once scope the whole file is read here, once, and kept: the parse
    that follows detection, the document's SHA-256 and the PDF attachment use those bytes."""
    raw = _kept_raw(path)
    if raw is not None:
        if raw[:2] == b"\x1f\x8b":
            return _inflate_kept(raw, size, DEFAULT_LIMITS, path, truncate=True)
        return raw[:size]
    with _reading(path) as fd:
        first = os.read(fd, 2)
        if first == b"\x1f\x8b":
            return _inflate(fd, first, size, DEFAULT_LIMITS, path, truncate=True)
        return first + os.read(fd, size - len(first)) if size > len(first) else first[:size]


def read_bytes(path: Path, limits: Limits = DEFAULT_LIMITS, limit: int | None = None) -> bytes:
    """The whole file (decompressed for gzip), refusing more than ``limit`` (text_bytes) bytes."""
    limit = limits.text_bytes if limit is None else limit
    raw = _kept_raw(path)
    if raw is not None:
        if raw[:2] == b"\x1f\x8b":
            return _inflate_kept(raw, limit, limits, path)
        if len(raw) > limit:
            _too_large(path, limit)
        return raw
    with _reading(path) as fd:
        first = os.read(fd, 2)
        if first == b"\x1f\x8b":
            return _inflate(fd, first, limit, limits, path)
        if os.fstat(fd).st_size > limit:
            _too_large(path, limit)
        os.lseek(fd, 0, os.SEEK_SET)           # a regular file (open_regular): read it whole, in one join
        data = read_fd_limited(fd, limit)      # stops one byte past the limit
        if len(data) > limit:
            _too_large(path, limit)
        return data


def _inflate_kept(raw: bytes, limit: int, limits: Limits, path: Path, truncate: bool = False) -> bytes:
    """``_inflate`` over bytes already read; a gzip fault is a LogError naming the file, as when
    reading from the descriptor."""
    try:
        return _inflate(io.BytesIO(raw[2:]).read, raw[:2], limit, limits, path, truncate=truncate)
    except zlib.error as exc:
        raise LogError(f"{path}: cannot read (not valid gzip: {exc})") from exc


def _kept_raw(path: Path) -> bytes | None:
    """The file's bytes as read once in this command's scope (reading them now when they fit the
    text limit); None outside a scope, for a table (its own library reads it, so keeping it would
    read it twice) or for a file too large to keep (then it is streamed)."""
    if not once.active() or is_table(path):
        return None
    kept = once.recall(path)
    if kept is not None:
        return kept
    with _reading(path) as fd:
        if os.fstat(fd).st_size > DEFAULT_LIMITS.text_bytes:
            return None
        data = read_fd_limited(fd, DEFAULT_LIMITS.text_bytes)
    return None if len(data) > DEFAULT_LIMITS.text_bytes else once.keep(path, data)


def _too_large(path: Path, limit: int) -> NoReturn:
    raise LogError(f"{path}: larger than the {limit / 2**20:.0f} MiB limit for one log; "
                   "split it or raise the limit (procure.measure.readers.Limits)")


def check_parse_budget(data: bytes, fmt: str, source: str, limits: Limits = DEFAULT_LIMITS) -> None:
    """Refuse a parse bomb before parsing: more lines (or JSON containers) than the text's size
    can honestly hold. Counting bytes is cheap (C speed); the objects would not be."""
    lines = data.count(b"\n") + data.count(b"\r")
    if lines > limits.max_lines:
        raise LogError(f"{source}: too many lines ({lines:,}, over the limit of {limits.max_lines:,} "
                       "lines for one log); split it or raise the limit (procure.measure.readers.Limits)")
    if lines > max(limits.budget_floor, len(data) // limits.min_bytes_per_line):
        raise LogError(f"{source}: {lines:,} lines in {len(data):,} bytes (under "
                       f"{limits.min_bytes_per_line} bytes a line): a parse bomb, refused")
    if fmt in JSON_FORMATS:
        containers = data.count(b"{") + data.count(b"[")
        if containers > max(limits.budget_floor, len(data) // limits.min_bytes_per_container):
            raise LogError(f"{source}: {containers:,} JSON objects and arrays in {len(data):,} bytes "
                           f"(under {limits.min_bytes_per_container} bytes each): a parse bomb, refused")


def decode(data: bytes, source: str) -> str:
    """UTF-8 text (a BOM is dropped); invalid bytes are a LogError with the byte offset."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad = data[exc.start:exc.start + 1].hex()
        raise LogError(f"{source}: not UTF-8 text (byte 0x{bad} at offset {exc.start}); "
                       "convert it with iconv -t UTF-8") from exc


def read_text(path: Path, limits: Limits = DEFAULT_LIMITS, fmt: str = "") -> str:
    data = read_bytes(path, limits)
    check_parse_budget(data, fmt, str(path), limits)
    return decode(data, str(path))


# ---------------------------------------------------------------------------------------------
# tables


def table_columns(path: Path, limits: Limits = DEFAULT_LIMITS) -> list[str]:
    """Column names of a Parquet or CSV table without reading its rows."""
    _check_table_size(path, limits)
    try:
        if _is_parquet(path):
            return list(_parquet_file(path).schema_arrow.names)
        import pyarrow.csv as pcsv

        if _is_gzip(path):
            head = read_head(path, 1 << 20)
            head = head[: head.rfind(b"\n") + 1] or head     # whole lines: the cut one is not a row
            with pcsv.open_csv(_buffer(head), parse_options=_csv_parse(path)) as reader:
                return list(reader.schema.names)
        with pcsv.open_csv(str(path), parse_options=_csv_parse(path)) as reader:
            return list(reader.schema.names)
    except LogError:
        raise
    except Exception as exc:  # pyarrow raises many types for corrupt files
        raise LogError(f"{path}: cannot read table ({_first_line(exc)})") from exc


def read_table(path: Path, columns: list[str], limits: Limits = DEFAULT_LIMITS) -> Any:
    """A pyarrow Table with only ``columns`` (multithreaded readers).

    Parquet is read through ``ParquetFile`` (``pq.read_table`` goes through pyarrow.dataset,
    which imports pandas: half a second for nothing); its decoded size is checked first.
    """
    _check_table_size(path, limits)
    try:
        if _is_parquet(path):
            handle = _parquet_file(path)
            _check_parquet_rows(handle, path, limits, columns)
            _check_row_count(handle.metadata.num_rows, path, limits, "rows")
            table = handle.read(columns=columns, use_threads=True)
        else:
            table = _read_csv_capped(path, columns, limits)
        table.validate(full=True)   # a corrupt file (a dictionary index past its end) fails here, not later
        return table
    except LogError:
        raise
    except Exception as exc:
        raise LogError(f"{path}: cannot read table ({_first_line(exc)})") from exc


def _read_csv_capped(path: Path, columns: list[str], limits: Limits) -> Any:
    """Only ``columns``, streamed batch by batch and refused once past ``max_rows`` rows: a
    table of tiny rows stops at the limit instead of decoding all of them first."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    source = _buffer(read_bytes(path, limits, limit=limits.table_bytes)) if _is_gzip(path) else str(path)
    batches = []
    rows = 0
    with pcsv.open_csv(source, parse_options=_csv_parse(path),
                       convert_options=pcsv.ConvertOptions(include_columns=columns)) as reader:
        schema = reader.schema
        for batch in reader:
            rows += batch.num_rows
            _check_row_count(rows, path, limits, "rows", at_least=True)
            batches.append(batch)
    return pa.Table.from_batches(batches, schema=schema)


def _check_row_count(rows: int, path: Path, limits: Limits, what: str, at_least: bool = False) -> None:
    if rows > limits.max_rows:
        count = f"more than {limits.max_rows:,}" if at_least else f"{rows:,}"
        raise LogError(f"{path}: too many rows ({count}, over the limit of {limits.max_rows:,} {what} "
                       "for one table read in-process); summarise it with a dask scheduler "
                       "(--scheduler local) or split it")


def _parquet_file(path: Path) -> Any:
    import pyarrow.parquet as pq

    return pq.ParquetFile(str(path))


def _check_parquet_rows(handle: Any, path: Path, limits: Limits, columns: list[str] | None = None) -> None:
    """Decoded bytes of the columns read (8 a row, or the strings' own size) against the file's size."""
    meta = handle.metadata
    size = os.stat(path).st_size
    if meta.num_row_groups > limits.max_row_groups:
        raise LogError(f"{path}: too many row groups ({meta.num_row_groups:,}, over the limit of "
                       f"{limits.max_row_groups:,} for one Parquet file); rewrite it with larger row groups")
    decoded = 0
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            chunk = group.column(c)
            if columns is None or chunk.path_in_schema in columns:
                decoded += max(group.num_rows * 8, chunk.total_uncompressed_size)
    if decoded > max(limits.expansion_floor_bytes, limits.expansion_ratio * size) \
            or decoded > 4 * limits.table_bytes:
        raise LogError(f"{path}: {meta.num_rows:,} rows in a {size:,}-byte Parquet file decode to about "
                       f"{decoded / 2**20:,.0f} MiB (over {limits.expansion_ratio:g}x its size): a "
                       "decompression bomb, refused")


def _buffer(data: bytes) -> Any:
    import pyarrow as pa

    return pa.BufferReader(data)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def dask_table(path: Path, columns: list[str], limits: Limits = DEFAULT_LIMITS) -> Any:
    """A lazy dask DataFrame over the table's partitions (row groups / CSV blocks)."""
    _check_table_size(path, limits)
    import dask.dataframe as dd

    if _is_parquet(path):
        _check_parquet_rows(_parquet_file(path), path, limits, columns)
        return dd.read_parquet(str(path), columns=columns, split_row_groups=True)
    sep = "\t" if path.name.lower().endswith(".tsv") else ","
    compression = "gzip" if path.name.lower().endswith(".gz") else None
    if compression:   # inflated once here first, so a bomb is refused before dask sees it
        read_bytes(path, limits, limit=limits.table_bytes)
    # text columns: cells are coerced to numbers per partition, like the in-process reader
    return dd.read_csv(str(path), usecols=columns, sep=sep, compression=compression,
                       blocksize=None if compression else "64MB", dtype=str,
                       keep_default_na=False)


def _check_table_size(path: Path, limits: Limits) -> None:
    fd = _open(path)
    try:
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    if size > limits.table_bytes:
        raise LogError(f"{path}: larger than the {limits.table_bytes / 2**30:.1f} GiB limit "
                       "for one table; split it or use a dask scheduler with a raised limit")


def _magic(path: Path, size: int) -> bytes:
    fd = _open(path)
    try:
        return os.read(fd, size)
    finally:
        os.close(fd)


def _is_parquet(path: Path) -> bool:
    return _magic(path, 4) == b"PAR1"


def _is_gzip(path: Path) -> bool:
    return _magic(path, 2) == b"\x1f\x8b"


def _csv_parse(path: Path) -> Any:
    import pyarrow.csv as pcsv

    return pcsv.ParseOptions(delimiter="\t" if path.name.lower().endswith(".tsv") else ",")
