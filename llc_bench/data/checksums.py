"""Upstream sha256 of every download URL of the packaged dataset specs, or why it is unknown.

The table lives here and not in ``conf/dataset/*.yaml`` because a dataset config is part of
every run config and so of the run's hash: a pin added to the YAML would re-key committed
records whose data did not change. The spec loader (``spec.py``) reads this table for a
file whose YAML gives no ``sha256``; a YAML pin must agree with it. A file of a packaged
spec with a download URL has a row here (tests check it).

A row is ``url: (sha256, how it is known)`` or ``url: (UNKNOWN, why)``: such a download is
verified by parsing it and checking its shape and label counts against the spec.
Digests were computed from ``../shared/datasets`` (see its ``MANIFEST.tsv``) only where the
copy is the upstream file byte for byte, as the manifest states or as an independent
public copy of the same file confirms.
"""

from __future__ import annotations

from collections.abc import Iterable

from llc_bench.errors import ConfigError

UNKNOWN = "unknown"

_LIBSVM = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/"
_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/"
_ZJUZT = "https://raw.githubusercontent.com/ZJUZT/LLSVM/62be16488ce1b914bb9db613af36fbc165381adb/"
_PMLB = "https://github.com/EpistasisLab/pmlb/raw/253138e2aa4098734fb9154ec3570fbcad5f4197/"
_MNIST = ("https://ossci-datasets.s3.amazonaws.com/mnist/", "https://yann.lecun.com/exdb/mnist/")

_SAME_COMMIT = "mirror copy is this file at this commit (MANIFEST)"
_LECUN = "official LeCun file; mirror copy byte-identical (MANIFEST)"
_NOT_HERE = "no copy of this file was available to compute it"
_HEADER = ("the mirror copy is a GitHub copy with an added header removed, not known to be "
           "byte-identical")
_NOT_CONFIRMED = "the mirror copy is not confirmed byte-identical to this file"

_MNIST_FILES = {
    "train-images-idx3-ubyte.gz":
        "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
    "train-labels-idx1-ubyte.gz":
        "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
    "t10k-images-idx3-ubyte.gz":
        "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
    "t10k-labels-idx1-ubyte.gz":
        "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
}

UPSTREAM: dict[str, tuple[str, str]] = {
    # banana
    _ZJUZT + "data/banana/banana_data.mat":
        ("74a427d5d8db27ae20657e53e640bcc2ad4d310f7808bfac90cef1daf63358c0", _SAME_COMMIT),
    _ZJUZT + "data/banana/train_data.mat":
        ("7cdc2599424965f6904f3ebfab10c5db3cc733d79e07e8fe0d90099ebde6d69f", _SAME_COMMIT),
    _ZJUZT + "data/banana/test_data.mat":
        ("17ae365b479da320a0a83e3fc942f0177158cdc6b921ab7ae46b66139d00e22f", _SAME_COMMIT),
    _PMLB + "datasets/banana/banana.tsv.gz":
        ("f3ade821f9a0caebdd8b244319e66932c4b453ade027f42f86ed8ea1a50251ba", _SAME_COMMIT),
    # connect4
    _LIBSVM + "multiclass/connect-4": (UNKNOWN, "the mirror copy is a reconstruction"),
    _PMLB + "datasets/connect_4/connect_4.tsv.gz":
        ("e283074e1123d23361332bd83414c172640d2596fc076d1e20e8f4a64a658137", _SAME_COMMIT),
    # covtype, covtype_binary
    _LIBSVM + "binary/covtype.libsvm.binary.bz2": (UNKNOWN, _NOT_HERE),
    _UCI + "covtype/covtype.data.gz": (UNKNOWN, _NOT_HERE),
    # ML3's UCI sets
    _UCI + "statlog/german/german.data-numeric": (UNKNOWN, _NOT_CONFIRMED),
    _UCI + "statlog/heart/heart.dat": (UNKNOWN, _HEADER),
    _UCI + "ionosphere/ionosphere.data": (UNKNOWN, _HEADER),
    _UCI + "liver-disorders/bupa.data": (UNKNOWN, _HEADER),
    _UCI + "pima-indians-diabetes/pima-indians-diabetes.data":
        (UNKNOWN, "UCI withdrew the file; " + _NOT_CONFIRMED),
    _UCI + "undocumented/connectionist-bench/sonar/sonar.all-data": (UNKNOWN, _HEADER),
    _UCI + "spambase/spambase.data": (UNKNOWN, _HEADER),
    _UCI + "breast-cancer-wisconsin/wdbc.data":
        ("d606af411f3e5be8a317a5a8b652b425aaf0ff38ca683d5327ffff94c3695f4a",
         "decompressed mirror copy; the same bytes as the first commit of "
         "willhurwitz123/Wisconsin-breast-cancer-data"),
    _UCI + "breast-cancer-wisconsin/breast-cancer-wisconsin.data": (UNKNOWN, _HEADER),
    # ijcnn
    _LIBSVM + "binary/ijcnn1.bz2": (UNKNOWN, "the mirror copy was rewritten by tick"),
    _LIBSVM + "binary/ijcnn1.t.bz2": (UNKNOWN, "the mirror copy was rewritten by tick"),
    # letter
    _UCI + "letter-recognition/letter-recognition.data":
        ("2b89f3602cf768d3c8355267d2f13f2417809e101fc2b5ceee10db19a60de6e2",
         "decompressed mirror copy; the same bytes as davidgasquez/letter-recognition@f93744c"),
    _LIBSVM + "multiclass/letter.scale": (UNKNOWN, _NOT_HERE),
    _LIBSVM + "multiclass/letter.scale.t": (UNKNOWN, _NOT_HERE),
    # magic04
    _UCI + "magic/magic04.data":
        ("e9314b7ebd4b4b59a3b3d65f7316663963777b16a46786877651dbbaa640b36a",
         "decompressed mirror copy plus its missing final newline (MANIFEST); the same bytes "
         "as TanishaSharma01/MAGIC-gamma-hadron-classification@506aaed"),
    # mnist, mnist8m
    **{base + name: (sha, _LECUN) for name, sha in _MNIST_FILES.items() for base in _MNIST},
    _LIBSVM + "multiclass/mnist8m.bz2": (UNKNOWN, _NOT_HERE),
    # phishing
    _LIBSVM + "binary/phishing": (UNKNOWN, _NOT_CONFIRMED),
    # rcv1
    _LIBSVM + "binary/rcv1_train.binary.bz2": (UNKNOWN, _NOT_HERE),
    _LIBSVM + "binary/rcv1_test.binary.bz2": (UNKNOWN, _NOT_HERE),
    # ringnorm
    _PMLB + "datasets/ring/ring.tsv.gz":
        ("a5fff4a8241312d53818c146ca0b132dc760a6848e7b89ec2e3271fc6454e7da", _SAME_COMMIT),
    # skin
    _UCI + "00229/Skin_NonSkin.txt":
        (UNKNOWN, "public copies differ in line ends (LF / CRLF); the original's are not known"),
    # usps
    _LIBSVM + "multiclass/usps.bz2": (UNKNOWN, _NOT_HERE),
    _LIBSVM + "multiclass/usps.t.bz2": (UNKNOWN, _NOT_HERE),
    "https://hastie.su.domains/ElemStatLearn/datasets/zip.train.gz": (UNKNOWN, _NOT_CONFIRMED),
    "https://hastie.su.domains/ElemStatLearn/datasets/zip.test.gz": (UNKNOWN, _NOT_CONFIRMED),
    # w8a
    _LIBSVM + "binary/w8a":
        (UNKNOWN, "the mirror copy and another public copy differ by a trailing blank line"),
    _LIBSVM + "binary/w8a.t":
        ("618929ecb01bebb841daec4cae4aa07b97832d29b08652452775598929547fde",
         "decompressed mirror copy, an unchanged byte copy (MANIFEST)"),
}


def upstream_sha256(urls: Iterable[str], where: str) -> tuple[str | None, str | None]:
    """``(sha256, None)``, ``(None, why unknown)`` or ``(None, None)`` (no row) for one file.

    All URLs of one file serve the same bytes, so their rows must agree.
    """
    rows = {UPSTREAM[u] for u in urls if u in UPSTREAM}
    if len({sha for sha, _ in rows}) > 1:
        raise ConfigError(f"{where}: the checksum table gives different sha256 for its URLs")
    if not rows:
        return None, None
    sha, note = rows.pop()
    return (None, note) if sha == UNKNOWN else (sha, None)
