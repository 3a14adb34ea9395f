"""Names say what a thing is: no comment, config or file name dates a thing by a session,
a round or an issue number ("the thirteenth session's key", "issue 38",
``yardstick_after_s10.md``); its date and history live in git.

The patterns need an ordinal or a number beside the word, so technical uses (pytest's
``scope="session"``, onnxruntime's ``InferenceSession``, a session object's ``run``, the
LCC codebook step's "third round") do not match.
"""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ORDINALS = ("first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|"
            "twelfth|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|"
            "nineteenth|twentieth")
DATING = [re.compile(p, re.IGNORECASE) for p in (
    rf"\b({ORDINALS})[ -]sessions?\b",       # "the thirteenth session's"
    r"\bsessions? \d+",                      # "session 14"
    r"\b\d+(st|nd|rd|th)[ -]session",        # "14th session"
    r"\bround \d+",                          # "round 3" (an audit round)
    r"\bissues? ?#?\d+",                     # "issue 38", "issue-3" is caught below
    r"\bissue-\d+",
    r"\(#\d+\)|#\d+'s",                      # "(#38)", "#38's targets"
)]
FILE_NAME = re.compile(r"(^|_)s\d+([._]|$)|round_?\d|session|issue_?\d", re.IGNORECASE)
TEXT = {".py", ".yaml", ".yml", ".md", ".txt", ".toml", ".cfg", ".html", ".css", ""}
FOLDERS = ("llc_bench", "conf", "scripts", "docs")


def _files(*folders):
    for folder in folders:
        for path in sorted((REPO / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                yield path


def _dated_lines(paths):
    found = []
    for path in paths:
        if path.suffix not in TEXT:
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if any(p.search(line) for p in DATING):
                found.append(f"{path.relative_to(REPO)}:{n}: {line.strip()[:100]}")
    return found


def test_patterns_catch_dating_and_spare_technical_uses():
    dated = ["null: the selection of the thirteenth session and its key", "session 14",
             "the range issue 38 gives", "Input hardening, round 3", "the issue-3 benchmark",
             "Where #38's targets stand", "from the 10th session on"]
    technical = ['@pytest.fixture(scope="session")', "ort.InferenceSession(path)",
                 "session.run(None, {'X': raw})", "fell 2.4 % in the third round",
                 "LCC's codebook step (3 rounds: +0.54)", 'color: #222;']
    assert all(any(p.search(s) for p in DATING) for s in dated)
    assert not [s for s in technical if any(p.search(s) for p in DATING)]
    assert FILE_NAME.search("yardstick_after_s10.md") and FILE_NAME.search("bad_input_round6.py")
    assert not FILE_NAME.search("yardstick.md") and not FILE_NAME.search("sgd_training.py")


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_comment_or_config_dates_a_thing(folder):
    assert _dated_lines(_files(folder)) == []


def test_readme_and_makefile_date_nothing():
    assert _dated_lines([REPO / "README.md", REPO / "Makefile"]) == []


def test_no_file_name_dates_a_thing():
    paths = list(_files(*FOLDERS, "tests", "results/bench"))
    assert [str(p.relative_to(REPO)) for p in paths if FILE_NAME.search(p.name)] == []
    assert (REPO / "results" / "bench" / "yardstick.md").is_file()


def test_no_test_dates_a_thing():
    """The tests too (this file names the dated forms it refuses, so it is left out)."""
    own = Path(__file__).resolve()
    assert _dated_lines(p for p in _files("tests") if p.resolve() != own) == []
