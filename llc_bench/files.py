"""The one atomic writer, at the ground floor (every layer may use it).

A file is written to a temporary file in the same directory, flushed, fsync'ed and
renamed into place (``os.replace``): readers see the old file or the whole new one,
never a partial one.  New files get the mode the umask allows (``mkstemp`` alone would
give 0600, which collaborators sharing a store or a data home cannot read).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from llc_bench.errors import ConfigError


def file_mode() -> int:
    """The mode ``open()`` gives a new file under the current umask (0o666 & ~umask)."""
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def atomic_open(path) -> Iterator:
    """A binary file handle whose content replaces ``path`` when the block ends without an
    exception (and is removed otherwise)."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{path} is a directory: give a file name to write")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:  # named by the file asked for, not by the temporary's name
        raise type(err)(err.errno, f"cannot create a file in {path.parent} ({err.strerror})",
                        str(path)) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fchmod(handle.fileno(), file_mode())
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (:func:`atomic_open`)."""
    with atomic_open(path) as handle:
        handle.write(data)


def atomic_write_text(path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path, payload: Mapping) -> None:
    """Write ``payload`` as strict JSON (a NaN or inf is a ValueError) atomically."""
    atomic_write_text(path, json.dumps(payload, indent=1, sort_keys=False, allow_nan=False)
                      + "\n")


def check_not_input(out, inputs: Mapping, option: str) -> None:
    """A ConfigError when the file to write, ``out``, is one of ``inputs`` ({what: path}):
    writing it would replace what is being read."""
    out = Path(out)
    for what, path in inputs.items():
        path = Path(path)
        try:
            same = os.path.samefile(out, path)
        except OSError:  # one of them does not exist (yet)
            same = out.resolve() == path.resolve()
        if same:
            raise ConfigError(f"{option} {out} is the {what} {path}: writing it would replace "
                              f"what is read; give {option} another file name")
