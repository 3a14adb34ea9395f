"""Errors that the command line reports as one line (no traceback)."""


class LLCBenchError(Exception):
    """Base class: a user-facing problem with input, configuration or data."""


class ConfigError(LLCBenchError):
    """A configuration value is missing, unknown or out of range."""


class DatasetError(LLCBenchError):
    """A dataset file is missing, corrupt, or does not match its spec."""


class ResultsError(LLCBenchError):
    """A result record is unreadable, partial or inconsistent."""
