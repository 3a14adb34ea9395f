"""The argument parser of a subcommand: ``llc-bench <command>`` in its usage line, and
the description its ``--help`` prints."""

from __future__ import annotations

import argparse


def command_parser(command: str, description: str) -> argparse.ArgumentParser:
    """The parser of ``llc-bench <command>``."""
    return argparse.ArgumentParser(prog=f"llc-bench {command}", description=description)
