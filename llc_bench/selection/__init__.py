"""Hyper-parameter selection: the one selection estimator :class:`SearchCV` (``search``),
``tune=auto`` and ``llc-bench tune`` on a run config (``tune``), the Optuna sweeps' glue
(``tuning``), a study's best trial (``selection``) and the model presets (``presets``)."""

from .search import SearchCV

__all__ = ["SearchCV"]
