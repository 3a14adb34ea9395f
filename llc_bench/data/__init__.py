"""Data layer: dataset specs, file resolution, parsing, splits and scaling
(docs/design.md §Datasets).

>>> from llc_bench.data import load_dataset
>>> ds = load_dataset("banana", seed=0)            # doctest: +SKIP
>>> ds.X_train.shape, ds.classes                   # doctest: +SKIP
((3533, 2), ['-1', '1'])
"""

from llc_bench.data.dataset import Dataset
from llc_bench.data.fetch import data_home, default_home, mirror_dirs
from llc_bench.data.load import dataset_status, fetch_dataset, load_dataset
from llc_bench.data.registry import dataset_spec, list_datasets, resolve_spec
from llc_bench.data.synthetic import make_sine, make_xor

__all__ = [
    "Dataset",
    "data_home",
    "dataset_spec",
    "dataset_status",
    "default_home",
    "fetch_dataset",
    "list_datasets",
    "load_dataset",
    "make_sine",
    "make_xor",
    "mirror_dirs",
    "resolve_spec",
]
