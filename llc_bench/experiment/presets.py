"""The estimator a run would build, from Python: ``from_preset("sapl", dataset="usps")``."""

from __future__ import annotations


def from_preset(model: str, dataset: str | None = None, *overrides: str, seed: int = 0):
    """The unfitted estimator of ``llc-bench run model=MODEL dataset=DATASET tune=off
    [overrides]``: the model preset (``conf/model/<model>.yaml``), with the dataset's tuned
    preset (``conf/tuned/<model>_<dataset>.yaml``) when there is one, then ``overrides``
    (``"trainer.lambda_=1e-5"``, ``"coding.n_anchors=20"``).  The data's preprocessing
    (scaling) is the dataset's, not the estimator's: load it with
    ``llc_bench.data.load_dataset(dataset)``."""
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from llc_bench.experiment.runner import build_estimator

    chosen = [f"model={model}", f"seed={seed}", "tune=off"]
    chosen += [f"dataset={dataset}"] if dataset else ["~tuned"]
    with initialize_config_module("llc_bench.conf", version_base="1.3"):
        config = compose("run", overrides=[*chosen, *overrides])
    return build_estimator(OmegaConf.to_container(config, resolve=True))
