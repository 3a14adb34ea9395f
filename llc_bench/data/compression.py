"""Transparent gzip / bz2 / xz reading, detected by the file's magic bytes.

Magic bytes rather than the extension decide, so a ``.part`` download or a mirror copy
re-compressed under another name is read correctly. Decompression errors (truncated or
corrupt archives) surface as a one-line ``DatasetError`` naming the file, even when they
happen deep inside a parser.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zlib
from pathlib import Path

from llc_bench.errors import DatasetError

MAGIC = {b"\x1f\x8b": "gzip", b"BZh": "bz2", b"\xfd7zXZ\x00": "xz", b"\x1f\x9d": "compress"}
OPENERS = {"gzip": lambda raw: gzip.GzipFile(fileobj=raw, mode="rb"), "bz2": bz2.BZ2File,
           "xz": lzma.LZMAFile}
ARCHIVE_ERRORS = (EOFError, OSError, lzma.LZMAError, zlib.error)


def compression_of(path: Path) -> str:
    """``gzip``, ``bz2``, ``xz`` or ``none`` from the first bytes; the extension if empty."""
    with open(path, "rb") as fh:
        head = fh.read(6)
    for magic, kind in MAGIC.items():
        if head.startswith(magic):
            if kind == "compress":
                raise DatasetError(f"{path}: Unix compress (.Z) archives are not supported; "
                                   f"decompress it first (e.g. 'uncompress {path.name}')")
            return kind
    return "none"


class _CheckedReader(io.RawIOBase):
    """Raw stream over a decompressor that turns its errors into one-line DatasetErrors."""

    def __init__(self, raw, path: Path, kind: str):
        self._raw, self._path, self._kind = raw, path, kind
        self._inner = OPENERS[kind](raw)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        try:
            return self._inner.readinto(buffer)
        except ARCHIVE_ERRORS as exc:
            detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise DatasetError(f"{self._path}: truncated or corrupt {self._kind} archive "
                               f"({detail})") from exc

    def close(self) -> None:
        try:
            self._inner.close()
            self._raw.close()
        finally:
            super().close()


def open_binary(path: str | Path) -> io.BufferedReader:
    """Open ``path`` for binary reading, decompressing gzip/bz2/xz on the fly."""
    path = Path(path)
    kind = compression_of(path)
    raw = open(path, "rb")
    if kind == "none":
        return raw
    return io.BufferedReader(_CheckedReader(raw, path, kind), buffer_size=1 << 20)


def read_bytes(path: str | Path) -> bytes:
    """The whole decompressed content of ``path``."""
    with open_binary(path) as fh:
        return fh.read()
