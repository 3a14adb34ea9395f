"""Hyper-parameter selection: ``tune=auto`` and ``llc-bench tune`` (``tune``), the Optuna
sweeps' glue (``tuning``), a study's best trial (``selection``) and the model presets
(``presets``)."""
