"""Library warnings as one line of ours (llc_bench/console.py): k-means on few distinct
points, a raw RuntimeWarning, any other warning."""

from __future__ import annotations

import pytest
from conftest import one_error, own, problem

pytestmark = pytest.mark.usefixtures("cli_env")


def _warnings(err: str) -> list[str]:
    assert "Traceback" not in err and "Warning:" not in err.replace("llc-bench: warning:", "")
    return [line for line in err.splitlines() if line.strip()]


@pytest.mark.parametrize("rows, distinct", [
    ("1.0,2.0,3.0,{label}\n", 1),               # every feature constant
    ("{a:.0f},{b:.0f},0.5,{label}\n", 4),        # duplicate points: 4 distinct
])
def test_kmeans_on_few_distinct_points_is_one_line_of_ours(tmp_path, capsys, rows, distinct):
    import warnings

    X, y = problem()
    path = tmp_path / "few.csv"
    path.write_text("".join(rows.format(a=a > 0, b=b > 0, label=label)
                            for (a, b, _), label in zip(X, y, strict=True)))
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        code, out, err = own(tmp_path, capsys, path, "model=llsvm", "coding.n_anchors=5")
    assert code == 0, err
    lines = _warnings(err)
    assert len(lines) == 1 and lines[0].startswith("llc-bench: warning: k-means found only "
                                                   f"{distinct} distinct"), err
    assert "coding.n_anchors" in lines[0] and "ConvergenceWarning" not in err


def test_lambda_1e308_is_refused_without_a_raw_warning(tmp_path, capsys, csv_file):
    code, _, err = own(tmp_path, capsys, csv_file, "model=llsvm", "trainer.lambda_=1e308")
    one_error(code, err, "trainer.lambda_=1e+308", "1e+12")
    assert "RuntimeWarning" not in err


def test_any_other_library_warning_is_one_line(capsys):
    import warnings

    from llc_bench import console

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        console.install()
        warnings.warn("overflow encountered in matmul\nsecond line", RuntimeWarning,
                      stacklevel=1)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("llc-bench: warning: RuntimeWarning: "
                                                   "overflow encountered in matmul second line")
