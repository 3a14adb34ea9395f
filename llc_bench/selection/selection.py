"""Which hyper-parameters a run chose by cross-validation at the edge of its grid.

A CV choice at the smallest or largest grid value may mean the grid is too narrow (the
linear C grid once stopped at 2^-5, where CV kept choosing its low edge).  Every
estimator now records its CV in ``fit_info["cv"]`` as :mod:`llc_bench.models.grid_search`
writes it (the results table with ``at_grid_edge``); older records have a few other shapes
(``cv_accuracy``, ``cv_error``, SVM-KNN's ``cv["results"]``): :func:`grid_edges` reads
them all, so old records are checked the same way as new ones.
"""

from __future__ import annotations

from collections.abc import Mapping

# fit_info["selected"] names -> the names the CV result lists use (SVM-KNN says K)
_ALIASES = {"n_neighbors": "K"}


def _at_edge(chosen, values) -> bool:
    values = sorted({float(v) for v in values})
    return len(values) > 1 and float(chosen) in (values[0], values[-1])


def grid_edges(fit_info: Mapping | None) -> list[str]:
    """The parameters whose CV choice is the smallest or largest value of its grid."""
    if not fit_info:
        return []
    edges: list[str] = []
    cv = fit_info.get("cv")
    if isinstance(cv, Mapping) and "at_grid_edge" in cv:  # recorded at fit (grid_search)
        return list(cv["at_grid_edge"])
    # older records: the edges from the selection and the CV's scores
    selected = fit_info.get("selected") or {}
    scores = fit_info.get("cv_accuracy", fit_info.get("cv_error"))
    if isinstance(cv, Mapping) and isinstance(cv.get("results"), list):
        scores = cv["results"]  # SVM-KNN: [{"K", "C", "accuracy"}]
    if isinstance(scores, Mapping) and len(selected) >= 1:  # one parameter: {value: score}
        name = next(iter(selected))
        if _at_edge(selected[name], scores):
            edges.append(name)
    elif isinstance(scores, list) and scores:  # a grid of several: [{param: value, ...}]
        for name, chosen in selected.items():
            key = _ALIASES.get(name, name)
            if key in scores[0] and _at_edge(chosen, [row[key] for row in scores]):
                edges.append(name)
    return edges
