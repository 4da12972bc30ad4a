"""Partial results on disk: one Parquet file per finished chunk, so an interrupted sweep resumes
where it stopped.

The folder holds ``manifest.json`` (the sweep's fingerprint: sweep.yaml, the catalog and price
lines it resolved to, the fitted knobs, the procure version) and ``chunk-NNNNN.parquet`` files,
each written atomically (temp file, then rename) by the process that runs the sweep, never by a
worker: a remote Dask worker need not share this file system. A folder whose fingerprint differs
belongs to another sweep and is never mixed in.

A chunk is only resumed from when this user's procure wrote it: the SHA-256 of the sweep's
fingerprint, the chunk's index and its bytes is recorded, as each chunk is written, in a ledger in
the user's private cache folder (``<cache>/sweep-parts/<fingerprint>.json``, see
``procure.catalog.cache``), which a bid bundle or a colleague's copy of the output folder cannot
write. A chunk whose digest is missing or differs (a forged or edited file, a link, a chunk of
another sweep) is discarded and recomputed, with a note under ``--verbose``. With the cache turned
off (``PROCURE_CACHE_DIR=off``) nothing is resumed: every chunk is recomputed. The parts folder
itself must be a real folder: a link there is refused, never followed or removed (``--fresh`` too).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

from procure.errors import input_error
from procure.sweep.columns import EVAL_COLUMNS, flatten, nest, parquet_bytes, read_parquet

MANIFEST = "manifest.json"
LEDGER_SCHEMA = "procure.sweep-ledger/v1"
MAX_PART_BYTES = 1 << 30
PART = "chunk-{:05d}.parquet"


def fingerprint(raw: bytes, context: Any) -> str:
    """What the results depend on: sweep.yaml and everything resolved from it (``repr`` of the
    frozen context is deterministic), and the procure version."""
    from procure import __version__

    digest = hashlib.sha256(raw)
    digest.update(repr(context).encode("utf-8"))
    digest.update(str(__version__).encode("utf-8"))
    return digest.hexdigest()


class PartStore:
    def __init__(self, folder: Path, fingerprint_hex: str, total_chunks: int):
        self.folder = Path(folder)
        self.fingerprint = fingerprint_hex
        self.total_chunks = total_chunks
        self._digests: dict[str, str] = {}

    def open(self, fresh: bool = False) -> set[int]:
        """Prepare the folder; return the ids of the chunks already finished (and verified)."""
        self._refuse_link()
        if self.folder.exists() and (fresh or not self._ours()):
            if not fresh:
                raise input_error(str(self.folder), "other-sweep",
                                  f"{self.folder} holds partial results of a different sweep (or of "
                                  "other inputs); pass --fresh to discard them")
            shutil.rmtree(self.folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        if not (self.folder / MANIFEST).exists():
            self._write(MANIFEST, json.dumps({"schema": "procure.sweep-parts/v1",
                                              "fingerprint": self.fingerprint,
                                              "chunks": self.total_chunks}).encode("utf-8"))
        self._digests = self._read_ledger()
        return {i for i in range(self.total_chunks) if self._readable(i)}

    def _refuse_link(self) -> None:
        """The parts folder (and its manifest) must be real: a link is refused, never followed."""
        for path in (self.folder, self.folder / MANIFEST):
            try:
                mode = os.lstat(path).st_mode
            except FileNotFoundError:
                continue
            except OSError:
                continue   # reported by the operation that needs it
            want_dir = path == self.folder
            proper = stat.S_ISDIR(mode) if want_dir else stat.S_ISREG(mode)
            if not proper:   # a link is neither
                kind = "a link" if stat.S_ISLNK(mode) else "not a " + ("folder" if want_dir else "plain file")
                raise input_error(str(path), "unsafe-parts",
                                  f"{path} is {kind}; procure neither follows nor removes it. Remove it "
                                  "yourself if it is safe, or choose another -o folder")

    def _ours(self) -> bool:
        try:
            manifest = json.loads(self._read_bytes(MANIFEST, 1 << 20))
        except (OSError, ValueError):
            return False
        return isinstance(manifest, dict) and manifest.get("fingerprint") == self.fingerprint

    def _read_bytes(self, name: str, limit: int) -> bytes:
        from procure.sources.files import open_regular, read_fd_limited

        fd = open_regular(self.folder / name, follow_symlinks=False)
        try:
            data = read_fd_limited(fd, limit)
        finally:
            os.close(fd)
        if len(data) > limit:
            raise ValueError(f"{name} is larger than any partial result")
        return data

    def digest(self, chunk_id: int, data: bytes) -> str:
        """The sweep's fingerprint, the chunk's index and its content, in one SHA-256."""
        h = hashlib.sha256(self.fingerprint.encode("ascii"))
        h.update(b"\0%d\0" % chunk_id)
        h.update(data)
        return h.hexdigest()

    def _readable(self, chunk_id: int) -> bool:
        name = PART.format(chunk_id)
        if not os.path.lexists(self.folder / name):
            return False
        try:
            data = self._read_bytes(name, MAX_PART_BYTES)
            if self._digests.get(str(chunk_id)) != self.digest(chunk_id, data):
                raise ValueError("its digest is not the one this procure recorded when writing it")
            read_parquet(data)
        except Exception as exc:  # noqa: BLE001 - a torn, forged or foreign file is simply recomputed
            _note(self.folder / name, str(exc) or type(exc).__name__)
            try:
                os.unlink(self.folder / name)   # removes a link itself, never its target
            except OSError:
                pass
            return False
        return True

    # the ledger of digests, in the user's private cache folder

    def _ledger_path(self) -> Path | None:
        from procure.catalog.cache import cache_dir

        folder = cache_dir()
        return None if folder is None else folder / "sweep-parts" / f"{self.fingerprint[:32]}.json"

    def _read_ledger(self) -> dict[str, str]:
        from procure.catalog.cache import _open_trusted

        path = self._ledger_path()
        if path is None or not os.path.lexists(path):
            return {}
        fd = _open_trusted(path)
        if fd is None:
            _note(path, "it is a link, or others could have written it")
            return {}
        try:
            with os.fdopen(fd, "rb") as fh:
                ledger = json.loads(fh.read(1 << 24))
        except (OSError, ValueError) as exc:
            _note(path, str(exc))
            return {}
        if not isinstance(ledger, dict) or ledger.get("schema") != LEDGER_SCHEMA or \
                ledger.get("fingerprint") != self.fingerprint or not isinstance(ledger.get("chunks"), dict):
            return {}
        return {str(k): v for k, v in ledger["chunks"].items() if isinstance(v, str)}

    def _record(self, chunk_id: int, digest_hex: str) -> None:
        self._digests[str(chunk_id)] = digest_hex   # this run reads its own chunks back by it
        path = self._ledger_path()
        if path is None:
            return
        data = json.dumps({"schema": LEDGER_SCHEMA, "fingerprint": self.fingerprint,
                           "chunks": self._digests}, sort_keys=True).encode("utf-8")
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            return   # an unwritable cache: this chunk is recomputed if the sweep is resumed

    def write(self, chunk_id: int, rows: list[dict[str, Any]]) -> None:
        data = parquet_bytes([flatten(r) for r in rows], EVAL_COLUMNS)
        self._write(PART.format(chunk_id), data)
        self._record(chunk_id, self.digest(chunk_id, data))

    def read(self, chunk_ids: list[int]) -> list[dict[str, Any]]:
        """The rows of these chunks, in the order given; each checked against its digest again
        (a file swapped in during the run is an error, never merged)."""
        rows: list[dict[str, Any]] = []
        for i in chunk_ids:
            data = self._read_bytes(PART.format(i), MAX_PART_BYTES)
            if self._digests.get(str(i)) != self.digest(i, data):
                raise input_error(str(self.folder / PART.format(i)), "changed-parts",
                                  f"{PART.format(i)} was changed by someone else during the sweep; "
                                  "rerun it")
            rows.extend(nest(r) for r in read_parquet(data))
        return rows

    def remove(self) -> None:
        if os.path.islink(self.folder):
            return   # never follow a link out of the output folder
        shutil.rmtree(self.folder, ignore_errors=True)

    def _write(self, name: str, data: bytes) -> None:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=self.folder)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, self.folder / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _note(path: Path, why: str) -> None:
    logging.getLogger("procure.cache.sweep").info("discarded the partial result %s (%s); recomputing it",
                                                  path, why)
