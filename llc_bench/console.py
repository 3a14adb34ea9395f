"""What the console script prints besides its results: a library's warning as one line of
ours (``llc-bench: warning: ...``), with the known ones said in our words."""

from __future__ import annotations

import os
import re
import sys
import warnings

from llc_bench.errors import LLCBenchWarning

#: the exit status of a command whose output pipe closed (as a Unix tool killed by SIGPIPE)
CLOSED_PIPE_STATUS = 128 + 13

#: (pattern of a library's warning, our words for it: a format of the pattern's groups)
KNOWN = (
    (re.compile(r"Number of distinct clusters \((\d+)\) found smaller than n_clusters "
                r"\((\d+)\)"),
     "k-means found only {0} distinct training points for {1} centres (duplicate rows or "
     "constant features): centres repeat; {0} anchors, clusters or landmarks would do the "
     "same (coding.n_anchors, trainer.n_clusters, trainer.n_components)"),
)


def warning_text(message, category) -> str:
    """One line for a warning: ours as it is, a known one in our words, else its type and
    first line."""
    text = " ".join(str(message).split())
    if issubclass(category, LLCBenchWarning):
        return text
    for pattern, ours in KNOWN:
        match = pattern.search(text)
        if match:
            return ours.format(*match.groups())
    return f"{category.__name__}: {text}"


def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """``warnings.showwarning`` of the console script: one line on stderr, no source."""
    from llc_bench import progress

    ours = issubclass(category, LLCBenchWarning) or any(
        pattern.search(str(message)) for pattern, _ in KNOWN)
    where = "" if ours else f" ({filename.rsplit('/', 1)[-1]}:{lineno})"
    stream = sys.stderr if file is None else file
    progress.above(lambda text: print(text, file=stream, flush=True))(
        f"llc-bench: warning: {warning_text(message, category)}{where}")


def install() -> None:
    """Every warning from here on is printed by :func:`show_warning`."""
    warnings.showwarning = show_warning


def stdout_closed() -> None:
    """The reader of our stdout went away (``llc-bench ... | head``): an ordinary end, as
    for any Unix tool; stdout goes to /dev/null so that the interpreter's own flush at exit
    stays quiet, and the exit status is SIGPIPE's."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (a test's capture)
        pass
    raise SystemExit(CLOSED_PIPE_STATUS)
