"""Parsers on small files written in tmp dirs: svmlight, csv, idx, mat, ldkl, compression."""

from __future__ import annotations

import bz2
import gzip
import lzma
import struct

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from llc_bench.data.compression import compression_of, read_bytes
from llc_bench.data.formats import parse_file
from llc_bench.data.spec import canonical_label
from llc_bench.errors import DatasetError

COMPRESSORS = {"": lambda b: b, ".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}
SVMLIGHT = b"1 1:0.5 3:2\n-1 2:1.5\n+1 1:-1 2:2 3:3\n\n"


def write(path, data: bytes):
    path.write_bytes(data)
    return path


def labels(parsed) -> list[str]:
    return [parsed.label_names[c] for c in parsed.label_codes]


@pytest.mark.parametrize("suffix", list(COMPRESSORS))
def test_svmlight_plain_and_compressed(tmp_path, suffix):
    path = write(tmp_path / f"toy{suffix}", COMPRESSORS[suffix](SVMLIGHT))
    parsed = parse_file(path, "svmlight", {}, n_features=4)
    assert sp.issparse(parsed.X) and parsed.X.shape == (3, 4)
    np.testing.assert_array_equal(parsed.X.toarray(), [[0.5, 0, 2, 0], [0, 1.5, 0, 0],
                                                       [-1, 2, 3, 0]])
    assert labels(parsed) == ["1", "-1", "1"]


def test_compression_detected_by_magic_not_extension(tmp_path):
    path = write(tmp_path / "looks_plain.txt", bz2.compress(b"hello"))
    assert compression_of(path) == "bz2"
    assert read_bytes(path) == b"hello"
    plain = write(tmp_path / "named.gz", b"not gzip at all")
    assert compression_of(plain) == "none" and read_bytes(plain) == b"not gzip at all"


def test_svmlight_labels_as_floats_and_one_to_ten(tmp_path):
    path = write(tmp_path / "multi", b"1.0 1:1\n10 1:2\n-1.0 2:3\n")
    assert labels(parse_file(path, "svmlight", {}, n_features=2)) == ["1", "10", "-1"]


def test_svmlight_too_many_features_is_one_line_error(tmp_path):
    path = write(tmp_path / "wide.bz2", bz2.compress(b"1 1:1 7:2\n"))
    with pytest.raises(DatasetError) as err:
        parse_file(path, "svmlight", {}, n_features=3)
    message = str(err.value)
    assert str(path) in message and "\n" not in message and "features" in message


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_truncated_archive_is_one_line_error(tmp_path, suffix):
    body = COMPRESSORS[suffix](SVMLIGHT * 2000)
    path = write(tmp_path / f"cut{suffix}", body[: len(body) // 2])
    with pytest.raises(DatasetError, match="truncated or corrupt") as err:
        parse_file(path, "svmlight", {}, n_features=4)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_corrupt_gzip_csv_is_one_line_error(tmp_path):
    rows = np.random.default_rng(0).random((2000, 3))
    body = bytearray(gzip.compress("\n".join(f"{a},{b},{c}" for a, b, c in rows).encode()))
    body[len(body) // 2: len(body) // 2 + 64] = b"\x00" * 64
    path = write(tmp_path / "bad.csv.gz", bytes(body))
    with pytest.raises(DatasetError, match="truncated or corrupt gzip") as err:
        parse_file(path, "csv", {"sep": ","})
    assert "\n" not in str(err.value)


def test_unix_compress_is_rejected_with_hint(tmp_path):
    path = write(tmp_path / "connect-4.data.Z", b"\x1f\x9d\x90abc")
    with pytest.raises(DatasetError, match="not supported"):
        parse_file(path, "csv", {})


@pytest.mark.parametrize("label_column, row", [(0, "g,1.5,2"), (-1, "1.5,2,g"), (1, "1.5,g,2")])
def test_csv_label_in_any_column_with_string_labels(tmp_path, label_column, row):
    text = "\n".join([row, row.replace("g", "h").replace("1.5", "3")]) + "\n"
    path = write(tmp_path / "t.csv.xz", lzma.compress(text.encode()))
    parsed = parse_file(path, "csv", {"sep": ",", "label_column": label_column})
    np.testing.assert_array_equal(parsed.X, [[1.5, 2], [3, 2]])
    assert labels(parsed) == ["g", "h"]


def test_csv_header_whitespace_and_id_column(tmp_path):
    path = write(tmp_path / "w.txt", b"id  a b  label\n 7 1 2 M \n8 3 4 B\n")
    parsed = parse_file(path, "csv", {"sep": "whitespace", "header": True, "label_column": -1,
                                      "drop_columns": [0]})
    np.testing.assert_array_equal(parsed.X, [[1, 2], [3, 4]])
    assert labels(parsed) == ["M", "B"]


def test_csv_tab_separated_numeric_labels_canonical(tmp_path):
    path = write(tmp_path / "t.tsv.gz", gzip.compress(b"1\t2\t1.0\n3\t4\t2\n5\t6\t1\n"))
    parsed = parse_file(path, "csv", {"sep": "\t"})
    assert labels(parsed) == ["1", "2", "1"] and parsed.X.dtype == np.float64


def test_csv_categorical_column_rejected_or_one_hot(tmp_path):
    path = write(tmp_path / "german.data", b"A11 6 A34 1\nA12 48 A32 2\nA11 12 A34 1\n")
    with pytest.raises(DatasetError, match="non-numeric value 'A11'"):
        parse_file(path, "csv", {"sep": "whitespace"})
    parsed = parse_file(path, "csv", {"sep": "whitespace", "categorical": "onehot"})
    # A11/A12 -> 2 columns, 6/48/12 numeric, A32/A34 -> 2 columns
    np.testing.assert_array_equal(parsed.X, [[1, 0, 6, 0, 1], [0, 1, 48, 1, 0],
                                             [1, 0, 12, 0, 1]])


def test_csv_one_hot_with_stated_category_order(tmp_path):
    path = write(tmp_path / "c4.data", b"b,x,win\no,b,loss\n")
    parsed = parse_file(path, "csv", {"sep": ",", "one_hot_categories": ["x", "b", "o"]})
    np.testing.assert_array_equal(parsed.X, [[0, 1, 0, 1, 0, 0], [0, 0, 1, 0, 1, 0]])
    bad = write(tmp_path / "c4bad.data", b"b,q,win\n")
    with pytest.raises(DatasetError, match="not one of the categories"):
        parse_file(bad, "csv", {"sep": ",", "one_hot_categories": ["x", "b", "o"]})


def test_csv_missing_value_becomes_nan(tmp_path):
    path = write(tmp_path / "nan.csv", b"1,,1\n2,3,0\n")
    parsed = parse_file(path, "csv", {"sep": ","})
    assert np.isnan(parsed.X[0, 1])


def idx_bytes(array: np.ndarray, code: int = 0x08) -> bytes:
    header = bytes([0, 0, code, array.ndim]) + struct.pack(f">{array.ndim}i", *array.shape)
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()


def test_idx_images_and_labels(tmp_path):
    images = np.arange(3 * 2 * 2, dtype=np.uint8).reshape(3, 2, 2)
    x_path = write(tmp_path / "img-idx3-ubyte.gz", gzip.compress(idx_bytes(images)))
    y_path = write(tmp_path / "lab-idx1-ubyte", idx_bytes(np.array([7, 0, 7], np.uint8)))
    X = parse_file(x_path, "idx", {}, kind="x").X
    assert X.dtype == np.uint8 and X.shape == (3, 4)
    np.testing.assert_array_equal(X[1], [4, 5, 6, 7])
    assert labels(parse_file(y_path, "idx", {}, kind="y")) == ["7", "0", "7"]


def test_idx_big_endian_int32_and_truncation(tmp_path):
    values = np.array([[1, -2], [300000, 4]], dtype=np.int32)
    path = write(tmp_path / "i32", idx_bytes(values, 0x0C))
    np.testing.assert_array_equal(parse_file(path, "idx", {}, kind="x").X, values)
    cut = write(tmp_path / "cut", idx_bytes(values, 0x0C)[:-3])
    with pytest.raises(DatasetError, match="truncated"):
        parse_file(cut, "idx", {}, kind="x")
    junk = write(tmp_path / "junk", b"PK\x03\x04 not idx")
    with pytest.raises(DatasetError, match="not an IDX file"):
        parse_file(junk, "idx", {}, kind="x")


def test_mat_either_orientation_and_missing_variable(tmp_path):
    X = np.arange(10.0).reshape(5, 2)
    y = np.array([[1, -1, 1, 1, -1]])
    wide = tmp_path / "wide.mat"
    scipy.io.savemat(wide, {"data": X.T, "label": y})
    parsed = parse_file(wide, "mat", {"x_key": "data", "y_key": "label"})
    np.testing.assert_array_equal(parsed.X, X)
    assert labels(parsed) == ["1", "-1", "1", "1", "-1"]
    tall = tmp_path / "tall.mat"
    scipy.io.savemat(tall, {"train_X": X, "train_Y": y.T.astype(np.int16)})
    np.testing.assert_array_equal(
        parse_file(tall, "mat", {"x_key": "train_X", "y_key": "train_Y"}).X, X)
    with pytest.raises(DatasetError, match="variable 'X' not found"):
        parse_file(tall, "mat", {})


def test_ldkl_text_format(tmp_path):
    path = write(tmp_path / "b.train.xz", lzma.compress(b"2 2\n1 0.5 1.5\n-1 2.0 3.0\n"))
    parsed = parse_file(path, "ldkl", {})
    np.testing.assert_array_equal(parsed.X, [[0.5, 1.5], [2, 3]])
    bad = write(tmp_path / "b.bad", b"3 2\n1 0.5 1.5\n")
    with pytest.raises(DatasetError, match="header says 3 x 2"):
        parse_file(bad, "ldkl", {})


@pytest.mark.parametrize("raw, canon", [(1, "1"), (1.0, "1"), ("+1", "1"), ("-1.0", "-1"),
                                        (" g ", "g"), (0.5, "0.5"), (b"M", "M")])
def test_canonical_label(raw, canon):
    assert canonical_label(raw) == canon


def test_csv_label_column_by_header_name(tmp_path):
    path = write(tmp_path / "named.tsv", b"A1\ttarget\tA2\n1\t0\t2\n3\t1\t4\n")
    parsed = parse_file(path, "csv", {"sep": "\t", "header": True, "label_column": "target"})
    np.testing.assert_array_equal(parsed.X, [[1, 2], [3, 4]])
    assert labels(parsed) == ["0", "1"]
    with pytest.raises(DatasetError, match="'label' is not a column name"):
        parse_file(path, "csv", {"sep": "\t", "header": True, "label_column": "label"})
