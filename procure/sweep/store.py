"""Partial results on disk: one Parquet file per finished chunk, so an interrupted sweep resumes
where it stopped.

The folder holds ``manifest.json`` (the sweep's fingerprint: sweep.yaml, the catalog and price
lines it resolved to, the fitted knobs, the procure version) and ``chunk-NNNNN.parquet`` files,
each written atomically (temp file, then rename) by the process that runs the sweep, never by a
worker: a remote Dask worker need not share this file system. A folder whose fingerprint differs
belongs to another sweep and is never mixed in.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from procure.errors import input_error
from procure.sweep.columns import EVAL_COLUMNS, flatten, nest, parquet_bytes, read_parquet

MANIFEST = "manifest.json"
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

    def open(self, fresh: bool = False) -> set[int]:
        """Prepare the folder; return the ids of the chunks already finished."""
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
        return {i for i in range(self.total_chunks) if self._readable(i)}

    def _ours(self) -> bool:
        try:
            manifest = json.loads((self.folder / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return isinstance(manifest, dict) and manifest.get("fingerprint") == self.fingerprint

    def _readable(self, chunk_id: int) -> bool:
        path = self.folder / PART.format(chunk_id)
        if not path.is_file():
            return False
        try:
            read_parquet(path.read_bytes())
        except Exception:  # noqa: BLE001 - a torn or foreign file is simply recomputed
            path.unlink(missing_ok=True)
            return False
        return True

    def write(self, chunk_id: int, rows: list[dict[str, Any]]) -> None:
        self._write(PART.format(chunk_id), parquet_bytes([flatten(r) for r in rows], EVAL_COLUMNS))

    def read(self, chunk_ids: list[int]) -> list[dict[str, Any]]:
        """The rows of these chunks, in the order given."""
        rows: list[dict[str, Any]] = []
        for i in chunk_ids:
            rows.extend(nest(r) for r in read_parquet((self.folder / PART.format(i)).read_bytes()))
        return rows

    def remove(self) -> None:
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
