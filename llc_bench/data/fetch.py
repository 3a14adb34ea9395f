"""Finding dataset files: data home, then mirrors, then download (docs/design.md §Datasets).

* Data home: the ``home`` argument, else ``$LLC_BENCH_DATA``, else the checkout's
  ``datasets/`` directory, else ``~/.cache/llc-bench``. Downloads and the parsed-array
  cache go here.
* Mirrors (read-only): the ``mirrors`` argument, then ``$LLC_BENCH_MIRROR``
  (``os.pathsep``-separated).
* Download: each URL in turn, streamed with a tqdm bar to ``<file>.<pid>.part`` in the
  home and renamed to its final name only after the sha256 (when known) or the caller's
  parse check passes; a failed check deletes the partial file. Only https is accepted at
  the end of the redirect chain (an http URL may redirect to https, never the reverse).
* Spec paths are relative and stay inside the home or mirror they are looked up in.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import HTTPRedirectHandler, Request, build_opener

from tqdm.auto import tqdm

import llc_bench
from llc_bench.data.spec import DatasetSpec, FileEntry, Source
from llc_bench.errors import DatasetError

ENV_HOME = "LLC_BENCH_DATA"
ENV_MIRROR = "LLC_BENCH_MIRROR"
USER_HOME = Path("~/.cache/llc-bench")
CHUNK = 1 << 20
TIMEOUT = 60

Validator = Callable[[FileEntry, Path], None]
_sha_memo: dict[tuple[str, int, int], str] = {}


class HttpsOnlyRedirect(HTTPRedirectHandler):
    """Follow a redirect only to an https URL (https -> http or file:// is refused)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if urlparse(newurl).scheme != "https":
            fp.close()
            raise DatasetError(f"refused redirect to {newurl} (only https is accepted)")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


HANDLERS: list = [HttpsOnlyRedirect]


def urlopen(request: Request, timeout: float):
    """``urllib``'s urlopen with :data:`HANDLERS` (redirects to https only)."""
    return build_opener(*HANDLERS).open(request, timeout=timeout)


def inside(base: Path, relative: str) -> Path:
    """``base / relative``, which must not leave ``base`` (a spec path with '..' would)."""
    path = Path(os.path.normpath(base / relative))
    if path != base and base not in path.parents:
        raise DatasetError(f"file path {relative!r} of a dataset spec leaves {base}")
    return path


def _is_checkout(path: Path) -> bool:
    return (path / "pyproject.toml").is_file() and (path / "datasets").is_dir()


def default_home() -> Path:
    """``$LLC_BENCH_DATA``, else ``<checkout>/datasets``, else ``~/.cache/llc-bench``."""
    if os.environ.get(ENV_HOME):
        return Path(os.environ[ENV_HOME]).expanduser().resolve()
    package = Path(llc_bench.__file__).resolve().parent
    for root in (*package.parents[:2], Path.cwd()):
        if _is_checkout(root):
            return root / "datasets"
    return USER_HOME.expanduser()


def data_home(home: str | Path | None = None) -> Path:
    return Path(home).expanduser().resolve() if home is not None else default_home()


def mirror_dirs(mirrors: Iterable[str | Path] = ()) -> list[Path]:
    """The given mirrors, then those of ``$LLC_BENCH_MIRROR``, without duplicates."""
    if isinstance(mirrors, str | Path):
        mirrors = [mirrors]
    env = [p for p in os.environ.get(ENV_MIRROR, "").split(os.pathsep) if p]
    out: list[Path] = []
    for item in [*mirrors, *env]:
        path = Path(item).expanduser().resolve()
        if path not in out:
            out.append(path)
    return out


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file (memoised per path, size and mtime within the process)."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _sha_memo:
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(CHUNK), b""):
                digest.update(block)
        _sha_memo[key] = digest.hexdigest()
    return _sha_memo[key]


@dataclass(frozen=True)
class Located:
    """Where one file of a source was found."""

    entry: FileEntry
    path: Path
    found_in: str  # "home" | "mirror" | "download" | "path" (a user's absolute path)

    def describe(self) -> dict:
        """Provenance; ``matches_upstream_sha256`` is None when not comparable (no pinned
        sha256, or a different copy under another name than the upstream file)."""
        sha, entry = sha256_of(self.path), self.entry
        upstream_name = Path(entry.download_path or entry.path).name
        comparable = entry.sha256 is not None and (self.path.name == upstream_name
                                                   or sha == entry.sha256)
        return {"role": entry.role, "path": str(self.path), "relative": entry.path,
                "found_in": self.found_in, "sha256": sha, "format": entry.format,
                "matches_upstream_sha256": sha == entry.sha256 if comparable else None}


def locate(entry: FileEntry, home: Path, mirrors: list[Path]) -> Located | None:
    """The first existing candidate path, home first, then each mirror."""
    if Path(entry.path).is_absolute():  # a user's own file (dataset=file)
        return Located(entry, Path(entry.path), "path") if Path(entry.path).is_file() else None
    for place, base in [("home", home), *(("mirror", m) for m in mirrors)]:
        for relative in entry.candidates:
            path = inside(base, relative)
            if path.is_file():
                return Located(entry, path, place)
    return None


def places_looked(home: Path, mirrors: list[Path]) -> str:
    places = [f"{home} (home)", *(f"{m} (mirror)" for m in mirrors)]
    if not mirrors:
        places.append(f"no mirror (${ENV_MIRROR} unset)")
    return ", ".join(places)


def _download_one(entry: FileEntry, url: str, part: Path) -> str:
    """Stream ``url`` into ``part``; returns the sha256 of the bytes written."""
    digest = hashlib.sha256()
    request = Request(url, headers={"User-Agent": "llc-bench"})
    with urlopen(request, timeout=TIMEOUT) as response, open(part, "wb") as out:
        final = response.geturl() if hasattr(response, "geturl") else url
        if urlparse(final).scheme != "https":
            raise DatasetError(f"refused: {final} is not https")
        total = response.headers.get("Content-Length") if response.headers else None
        with tqdm(total=int(total) if total else None, unit="B", unit_scale=True,
                  desc=Path(entry.download_path).name, disable=None, leave=False) as bar:
            for block in iter(lambda: response.read(CHUNK), b""):
                out.write(block)
                digest.update(block)
                bar.update(len(block))
    return digest.hexdigest()


def download(entry: FileEntry, home: Path, validate: Validator | None = None) -> Path:
    """Fetch one file into the home, trying each URL; only a verified file gets its name."""
    if not entry.urls:
        raise DatasetError(f"{entry.path}: no download URL known")
    dest = inside(home, entry.download_path)
    if not entry.sha256:
        how = "verified by its parsed shape" if validate else "not verified"
        print(f"llc-bench: note: {entry.download_path}: sha256 unknown "
              f"({entry.sha256_note or 'not pinned'}), so the download is {how}",
              file=sys.stderr)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatasetError(f"cannot write to the data home {home} ({exc.strerror or exc}); "
                           f"set LLC_BENCH_DATA to a writable directory") from exc
    errors = []
    for url in entry.urls:
        part = dest.with_name(f"{dest.name}.{os.getpid()}.part")
        try:
            sha = _download_one(entry, url, part)
            if entry.sha256 and sha != entry.sha256:
                raise DatasetError(f"checksum mismatch (got {sha[:12]}…, expected "
                                   f"{entry.sha256[:12]}…)")
            if not entry.sha256 and validate is not None:
                validate(entry, part)
            os.replace(part, dest)
            return dest
        except (OSError, DatasetError, ValueError) as exc:
            reason = (str(exc).splitlines() or [type(exc).__name__])[0]
            errors.append(f"{url}: {reason}")
        finally:
            part.unlink(missing_ok=True)
    raise DatasetError(f"download of {entry.path} failed: {'; '.join(errors)}")


def source_files(source: Source, home: Path,
                 mirrors: list[Path]) -> dict[FileEntry, Located | None]:
    return {entry: locate(entry, home, mirrors) for entry in source.files}


def _missing_summary(spec: DatasetSpec, home: Path, mirrors: list[Path]) -> tuple[str, str]:
    missing, urls = [], []
    for source in spec.sources:
        absent = [e for e, where in source_files(source, home, mirrors).items() if where is None]
        label = f"[{source.id}] " if len(spec.sources) > 1 else ""
        missing.append(label + ", ".join(e.path for e in absent))
        urls += [e.urls[0] for e in absent if e.urls]
    if urls:
        where = "download from " + ", ".join(urls)
    else:
        where = "no download URL is known" + (f"; see {spec.homepage}" if spec.homepage else "")
    return " | ".join(missing), where


def unavailable_error(spec: DatasetSpec, home: Path, mirrors: list[Path], why: str,
                      errors: list[str] = ()) -> DatasetError:
    missing, where = _missing_summary(spec, home, mirrors)
    tail = f"; download errors: {'; '.join(errors)}" if errors else ""
    return DatasetError(f"dataset {spec.name!r} is {why}: missing {missing}; looked in "
                        f"{places_looked(home, mirrors)}; {where}{tail}")


def resolve_source(spec: DatasetSpec, home: Path, mirrors: list[Path], download_ok: bool = True,
                   validate: Validator | None = None) -> tuple[Source, dict[FileEntry, Located]]:
    """The first source complete offline; else (if allowed) the first one that downloads."""
    for source in spec.sources:
        found = source_files(source, home, mirrors)
        if all(found.values()):
            return source, found
    if not download_ok:
        raise unavailable_error(spec, home, mirrors, "not available offline (downloads disabled)")
    errors = []
    for source in spec.sources:
        found = source_files(source, home, mirrors)
        absent = [e for e, where in found.items() if where is None]
        if not all(e.urls for e in absent):
            continue
        try:
            for entry in absent:
                found[entry] = Located(entry, download(entry, home, validate), "download")
            return source, found
        except DatasetError as exc:
            errors.append(str(exc))
    raise unavailable_error(spec, home, mirrors, "not available offline and could not be "
                            "downloaded", errors)

