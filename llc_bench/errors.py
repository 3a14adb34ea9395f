"""Errors that the command line reports as one line (no traceback)."""


class LLCBenchError(Exception):
    """Base class: a user-facing problem with input, configuration or data."""


class ConfigError(LLCBenchError):
    """A configuration value is missing, unknown or out of range."""


class DatasetError(LLCBenchError):
    """A dataset file is missing, corrupt, or does not match its spec."""


class ResultsError(LLCBenchError):
    """A result record is unreadable, partial or inconsistent."""


def did_you_mean(word: str, choices, prefix: str = "") -> str:
    """`` (did you mean dataset.max_train?)`` for the closest of ``choices`` (difflib), or
    ``""`` when none is close."""
    import difflib

    near = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {prefix}{near[0]}?)" if near else ""


class FitError(LLCBenchError):
    """A fit that ends without a usable model (its training objective is not finite)."""


class LLCBenchWarning(UserWarning):
    """A warning of ours: the command line prints its message as it is, on one line."""
