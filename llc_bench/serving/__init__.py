"""Applying a kept model: the model files (``model_files``: writing and the checked
reading), predictions on a data file (``predict``) and the ONNX export (``onnx_export``)."""


def load(path, config_dirs=()):
    """The fitted estimator kept in a model file (``.llcm``); ``config_dirs``: config dirs of
    your own whose ``trainer/`` and ``coding/`` files name your classes (``_target_``).

    The reading (skops' safe format, the format-version and allow-list checks, one-line
    errors) is ``llc_bench.serving.model_files.load_model``; its metadata (classes'
    label names, preprocessing, config hash) is ``load_model(path)[1]``.
    """
    from llc_bench.serving.model_files import load_model  # the one reader

    return load_model(path, config_dirs)[0]
