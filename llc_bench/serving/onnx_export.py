"""``llc-bench export MODEL_FILE --onnx OUT``: a kept model as an ONNX graph.

The graph takes the raw features (float64, shape (n, D)) as a file would give them, applies
the saved preprocessing (value scale, the training split's scaler) and returns the decision
values (``decision``: (n,) for two classes, (n, C) otherwise), built from the ``onnx``
package's standard operators in float64 and checked with its checker.  Squared distances
are ||x||² - 2 x·v + ||v||² (one MatMul), as the models compute them.

* linear (LIBLINEAR): ``X Wᵀ + b``;
* LL-SVM, LCC+SVM, LLC-SAPL, LLC-JO (fixed or learned anchors): ``TopK(largest=0)`` for the
  k nearest anchors, their weights as the coding's ``onnx_weights`` builds them — LL-SVM
  1/d^(p/2) with the exact hit rule, SAPL eq. 2 exp(-β(d - d_min)), JO's k*-NN rule (λ_k for
  every k by CumSum, k* = 1 + the leading run of λ_k > η_{k+1}, γ ∝ λ_{k*} - η over the
  first k*) — normalised, and
  f_c(x) = Σ_a γ_a (W_c[a]·x + b_c[a]) over the k active anchors (LL-SVM eq. 8);
* ML3: s(x, y) = ||[W_y x̃]₊||_q (eq. 16; binary: s(x, 1) - s(x, 0));
* OCC: γ̃ = V̄ᵀx / σ per basis, γ = γ̃ / ||γ̃||₁, f_c = Σ_v γ_v (W_c,v·x + b_c,v) + b_c;
* LDKL: every node's w_kᵀx̃, tanh(σ θ'_kᵀx̃) and gate θ_lᵀx̃ > 0 in three MatMuls, the
  path indicator of each node the product of its parent's and its gate's, summed;
* CSVM: the nearest cluster centre (ArgMin), its linear model gathered;
* kernel SVM (LIBSVM RBF): the one-vs-one values Σ α K(sv, x) + b, and for several
  classes scikit-learn's ``ovr`` votes plus confidences (constant 0/1 matrices);
* Nyström: K(x, landmarks) times the normalisation, then the linear SVM.

skl2onnx is not used: its SVC converter emits ``ai.onnx.ml.SVMClassifier``, whose scores
are float32 by the ONNX-ML specification (too coarse for 1e-5 on large margins), and it
knows none of our estimators or the saved preprocessing.  Refused with one line: SVM-KNN
(a LIBLINEAR problem solved per query row: no fixed graph computes it) and the LLC codes
of ``lcc_svm_lcc`` (a k x k linear solve per row; ONNX has no batched solve), and the LCC
codes of ``lcc_lasso`` (a weighted LASSO solved per row by coordinate descent).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from llc_bench.errors import ConfigError
from llc_bench.serving.model_files import base_estimator, load_model

OPSET = 18
DOUBLE, BOOL, INT64 = 11, 9, 7  # onnx.TensorProto's element types


class _Graph:
    """Nodes and initialisers of one graph; every name is made unique."""

    DOUBLE, BOOL, INT64 = DOUBLE, BOOL, INT64  # for the codings' ``onnx_weights``

    def __init__(self):
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes, self.inits, self.used = [], [], {"X"}  # the input's name

    def _name(self, name: str) -> str:
        base, i = name, 1
        while name in self.used:
            i += 1
            name = f"{base}_{i}"
        self.used.add(name)
        return name

    def const(self, name: str, array) -> str:
        array = np.asarray(array)
        name = self._name(name)
        self.inits.append(self.numpy_helper.from_array(
            array.astype(np.float64) if array.dtype.kind == "f" else array, name))
        return name

    def axes(self, *axes: int) -> str:
        return self.const("axes", np.array(axes, dtype=np.int64))

    def op(self, kind: str, inputs, output, **attrs):
        """A node; ``output`` is a name, or a list of names for several outputs."""
        outputs = [self._name(o) for o in (output if isinstance(output, list) else [output])]
        self.nodes.append(self.helper.make_node(kind, list(inputs), outputs, **attrs))
        return outputs if isinstance(output, list) else outputs[0]

    def matmul_add(self, x: str, weights, bias, name: str) -> str:
        """x Aᵀ + b for rows A (r, D)."""
        out = self.op("MatMul", [x, self.const(f"{name}_T", np.asarray(weights).T.copy())],
                      f"{name}_xa")
        return self.op("Add", [out, self.const(f"{name}_b", np.asarray(bias).ravel())], name)

    def sq_norms(self, x: str) -> str:
        """||x||² (n, 1)."""
        return self.op("ReduceSum", [self.op("Mul", [x, x], "x2"), self.axes(1)], "xx",
                       keepdims=1)

    def sq_distances(self, x: str, V: np.ndarray, xx: str | None = None) -> tuple[str, str]:
        """(||x - v||² (n, m) as ||x||² - 2 x·v + ||v||², ||x||²)."""
        xx = xx or self.sq_norms(x)
        g = self.op("MatMul", [x, self.const("points_T", V.T.copy())], "g")
        vv = np.einsum("ij,ij->i", V, V)
        d2 = self.op("Sub", [xx, self.op("Mul", [g, self.const("two", 2.0)], "g2")], "d2a")
        return self.op("Add", [d2, self.const("vv", vv[None, :])], "d2"), xx

    def rows(self, x: str, shape) -> str:
        """Reshape to (n, *shape)."""
        return self.op("Reshape", [x, self.const("shape", np.array([-1, *shape],
                                                                   dtype=np.int64))], "r")


def _preprocess(pre: dict | None, g: _Graph, x: str) -> str:
    """Nodes that turn the raw features into the model's (value scale, scaler)."""
    if not pre:
        return x
    if pre.get("value_scale") is not None:
        x = g.op("Mul", [x, g.const("value_scale", np.float64(pre["value_scale"]))],
                 "x_scaled")
    if pre.get("mean") is not None:
        x = g.op("Sub", [x, g.const("mean", np.asarray(pre["mean"]))], "x_centred")
    if pre.get("scale") is not None:
        x = g.op("Div", [x, g.const("scale", np.asarray(pre["scale"]))], "x_std")
    return x


def _linear(est, g: _Graph, x: str) -> str:
    coef = np.asarray(est.coef_, dtype=np.float64)
    return g.matmul_add(x, coef.reshape(-1, coef.shape[-1]), est.intercept_, "f")


def _local(est, g: _Graph, x: str) -> str:
    """LL-SVM eq. 8 over the k nearest anchors."""
    coding = est.coding_
    V = np.asarray(est.anchors_, dtype=np.float64)
    m, D = V.shape
    k = min(coding.k, m)
    d2, xx = g.sq_distances(x, V)
    d_raw, idx = g.op("TopK", [d2, g.const("k", np.array([k], dtype=np.int64))],
                      ["d_raw", "idx"], axis=1, largest=0, sorted=1)
    d = g.op("Max", [d_raw, g.const("zero", 0.0)], "d")
    w = coding.onnx_weights(g, d, k=k, xx=xx, idx=idx, anchors=V)  # the coding's own nodes
    w = g.op("Div", [w, g.op("ReduceSum", [w, g.axes(1)], "w_sum", keepdims=1)], "w")
    W = np.asarray(est.W_, dtype=np.float64)            # (n_out, m, D)
    b = np.asarray(est.b_, dtype=np.float64)            # (n_out, m)
    n_out = W.shape[0]
    if not est._use_W_fit:
        W = np.zeros_like(W)
    h = g.rows(g.matmul_add(x, W.reshape(n_out * m, D), b, "h_flat"), (n_out, m))
    idx3 = g.op("Unsqueeze", [idx, g.axes(1)], "idx3")                      # (n, 1, k)
    target = g.op("Concat", [g.op("Slice", [g.op("Shape", [h], "h_dims"), g.axes(0),
                                            g.axes(2)], "n_nout"),
                             g.const("kk", np.array([k], dtype=np.int64))], "idx_shape",
                  axis=0)
    h_act = g.op("GatherElements", [h, g.op("Expand", [idx3, target], "idx3e")], "h_act",
                 axis=2)                                                  # (n, n_out, k)
    w3 = g.op("Unsqueeze", [w, g.axes(1)], "w3")
    return g.op("ReduceSum", [g.op("Mul", [h_act, w3], "hw"), g.axes(2)], "f", keepdims=0)


def _ml3(est, g: _Graph, x: str) -> str:
    """ML3 eq. 16: s(x, y) = ||[W_y x̃]₊||_q, as ``ml3.latent_score`` (scaled by the max)."""
    from llc_bench.models.ml3 import _dual_exponent

    W = np.asarray(est.W_, dtype=np.float64)          # (c, m, D + 1)
    c, m, d1 = W.shape
    W2 = W.reshape(c * m, d1)
    z = g.rows(g.matmul_add(x, W2[:, :-1], W2[:, -1], "z"), (c, m))
    cp = g.op("Relu", [z], "z_pos")
    big = g.op("ReduceMax", [cp, g.axes(2)], "big", keepdims=1)
    p = float(est.p)
    if p == 1:
        s = big
    elif np.isinf(p):
        s = g.op("ReduceSum", [cp, g.axes(2)], "s", keepdims=1)
    else:
        q = _dual_exponent(p)
        safe = g.op("Where", [g.op("Greater", [big, g.const("zero", 0.0)], "positive"), big,
                              g.const("one", 1.0)], "big_safe")
        t = g.op("Div", [cp, safe], "scaled")
        tq = g.op("Mul", [t, t], "tq") if q == 2.0 else g.op("Pow", [t, g.const("q", q)], "tq")
        total = g.op("ReduceSum", [tq, g.axes(2)], "sum_tq", keepdims=1)
        s = g.op("Mul", [big, g.op("Pow", [total, g.const("inv_q", 1.0 / q)], "norm")], "s")
    S = g.op("Squeeze", [s, g.axes(2)], "scores")                           # (n, c)
    if c == 2:
        pos = g.op("Slice", [S, g.axes(1), g.axes(2), g.axes(1)], "s_pos")
        neg = g.op("Slice", [S, g.axes(0), g.axes(1), g.axes(1)], "s_neg")
        return g.op("Sub", [pos, neg], "f")
    return S


def _occ(est, g: _Graph, x: str) -> str:
    """OCC ``_scores``: the codes of each basis, then each output's local models."""
    n_out, M = est.b_.shape
    D = est.n_features_in_
    bases = est.bases_
    P = np.zeros((len(bases), M, D))
    S = np.ones((len(bases), M))
    for j, basis in enumerate(bases):
        P[j, : basis.M], S[j, : basis.M] = basis.vectors, basis.singular_values
    G = g.op("Div", [g.rows(g.op("MatMul", [x, g.const("planes_T", P.reshape(-1, D).T.copy())],
                                 "proj"), (len(bases), M)), g.const("sigma", S)], "g_tilde")
    norm = g.op("ReduceSum", [g.op("Abs", [G], "g_abs"), g.axes(2)], "l1", keepdims=1)
    safe = g.op("Where", [g.op("Greater", [norm, g.const("zero", 0.0)], "nonzero"), norm,
                          g.const("one", 1.0)], "l1_safe")
    G = g.op("Div", [G, safe], "gamma")
    of_output = np.zeros(n_out, np.int64) if len(bases) == 1 else np.arange(n_out)
    G = g.op("Gather", [G, g.const("of_output", of_output)], "gamma_out", axis=1)
    b = np.asarray(est.b_, dtype=np.float64)
    if est.W_ is None:
        V = g.const("b_local", b[None])
    else:
        V = g.op("Add", [g.rows(g.op("MatMul", [x, g.const(
            "W_T", np.asarray(est.W_, dtype=np.float64).reshape(-1, D).T.copy())], "xw"),
            (n_out, M)), g.const("b_local", b[None])], "h")
    f = g.op("ReduceSum", [g.op("Mul", [G, V], "gv"), g.axes(2)], "f0", keepdims=0)
    return g.op("Add", [f, g.const("intercept", np.asarray(est.intercept_).ravel())], "f")


def _ldkl(est, g: _Graph, x: str) -> str:
    """LDKL (L1) with the hard routing of (L2), all nodes at once."""
    W, Tp, Th = (np.asarray(a, dtype=np.float64)
                 for a in (est.W_, est.theta_prime_, est.theta_))
    K, M, d1 = W.shape
    L = Th.shape[1]
    zw = g.rows(g.matmul_add(x, W.reshape(-1, d1)[:, :-1], W.reshape(-1, d1)[:, -1], "zw"),
                (K, M))
    zp = g.rows(g.matmul_add(x, Tp.reshape(-1, d1)[:, :-1], Tp.reshape(-1, d1)[:, -1],
                             "zp"), (K, M))
    local = g.op("Mul", [g.op("Tanh", [g.op("Mul", [zp, g.const("sigma", float(est.sigma))],
                                              "szp")], "phi"), zw], "node_f")
    dims = g.op("Concat", [g.op("Slice", [g.op("Shape", [zw], "zw_dims"), g.axes(0), g.axes(2)],
                                "n_k"), g.const("one_i", np.array([1], dtype=np.int64))],
                "root_dims", axis=0)
    reach = [g.op("Expand", [g.const("root", np.ones((1, K, 1))), dims], "reach0")]  # (n, K, 1)
    if L:
        zt = g.rows(g.matmul_add(x, Th.reshape(-1, d1)[:, :-1], Th.reshape(-1, d1)[:, -1],
                                 "zt"), (K, L))
        left = g.op("Cast", [g.op("Greater", [zt, g.const("zero", 0.0)], "goes_left")],
                    "left", to=DOUBLE)
        right = g.op("Sub", [g.const("one", 1.0), left], "right")
        for k in range(1, M):  # breadth-first: the parent (k - 1) // 2 comes first
            parent = (k - 1) // 2
            side = left if k % 2 else right
            gate = g.op("Slice", [side, g.axes(parent), g.axes(parent + 1), g.axes(2)],
                        f"gate{k}")
            reach.append(g.op("Mul", [reach[parent], gate], f"reach{k}"))
    indicator = g.op("Concat", reach, "reach", axis=2) if M > 1 else reach[0]
    F = g.op("ReduceSum", [g.op("Mul", [indicator, local], "on_path"), g.axes(2)], "f",
             keepdims=0)                                                   # (n, K)
    return F


def _csvm(est, g: _Graph, x: str) -> str:
    """CSVM: the model of the nearest cluster centre (``assign_clusters``)."""
    C = np.asarray(est.cluster_centers_, dtype=np.float64)
    cross = g.op("MatMul", [x, g.const("centres_T", C.T.copy())], "cross")
    dist = g.op("Sub", [g.const("cc", (C ** 2).sum(axis=1)[None, :]),
                        g.op("Mul", [cross, g.const("two", 2.0)], "cross2")], "dist")
    cluster = g.op("ArgMin", [dist], "cluster", axis=1, keepdims=1)         # (n, 1)
    coef = np.asarray(est.coef_, dtype=np.float64)
    L, D = coef.shape[0], coef.shape[-1]
    n_out = int(np.prod(coef.shape[1:-1], dtype=np.int64))
    h = g.rows(g.matmul_add(x, coef.reshape(L * n_out, D), est.intercept_, "h_all"),
               (L, n_out))
    idx = g.op("Expand", [g.op("Unsqueeze", [cluster, g.axes(2)], "cluster3"),
                          g.const("idx_shape", np.array([1, 1, n_out], dtype=np.int64))],
               "cluster_e")
    return g.op("Squeeze", [g.op("GatherElements", [h, idx], "h_c", axis=1), g.axes(1)], "f")


def _rbf(g: _Graph, x: str, points: np.ndarray, gamma: float) -> str:
    """exp(-γ ||x - p||²) (n, r), the squared distance clipped at 0."""
    d2, _ = g.sq_distances(x, np.asarray(points, dtype=np.float64))
    d2 = g.op("Max", [d2, g.const("zero", 0.0)], "d2_pos")
    return g.op("Exp", [g.op("Mul", [d2, g.const("minus_gamma", -gamma)], "gd")], "kernel")


def _kernel(est, g: _Graph, x: str) -> str:
    """LIBSVM's one-vs-one decision values, and scikit-learn's ``ovr`` shape."""
    svc = est.svc_
    if svc.kernel != "rbf":
        raise ConfigError(f"ONNX export of the {svc.kernel!r} kernel is not implemented (rbf is)")
    sv = svc.support_vectors_
    Kx = _rbf(g, x, sv.toarray() if hasattr(sv, "toarray") else sv, float(svc._gamma))
    n_classes = len(svc.classes_)
    dual = svc._dual_coef_                                      # LIBSVM's signs
    dual = np.asarray(dual.toarray() if hasattr(dual, "toarray") else dual, dtype=np.float64)
    starts = np.concatenate([[0], np.cumsum(svc.n_support_)])
    pairs = [(i, j) for i in range(n_classes) for j in range(i + 1, n_classes)]
    A = np.zeros((dual.shape[1], len(pairs)))                   # (n_SV, pairs)
    for p, (i, j) in enumerate(pairs):
        A[starts[i]:starts[i + 1], p] = dual[j - 1, starts[i]:starts[i + 1]]
        A[starts[j]:starts[j + 1], p] = dual[i, starts[j]:starts[j + 1]]
    dec = g.op("Add", [g.op("MatMul", [Kx, g.const("alpha", A)], "ka"),
                       g.const("rho", np.asarray(svc._intercept_, dtype=np.float64))], "ovo")
    if n_classes == 2:
        return g.op("Neg", [dec], "f")      # scikit-learn: positive = classes_[1]
    # sklearn.utils.multiclass._ovr_decision_function(dec < 0, -dec, n_classes)
    win_i, win_j, conf = (np.zeros((len(pairs), n_classes)) for _ in range(3))
    for p, (i, j) in enumerate(pairs):
        win_i[p, i] = win_j[p, j] = 1.0
        conf[p, i], conf[p, j] = 1.0, -1.0
    first = g.op("Cast", [g.op("GreaterOrEqual", [dec, g.const("zero_v", 0.0)], "i_wins")],
                 "i_wins_f", to=DOUBLE)
    votes = g.op("Add", [g.op("MatMul", [first, g.const("win_i", win_i)], "votes_i"),
                         g.op("MatMul", [g.op("Sub", [g.const("one", 1.0), first], "j_wins"),
                                         g.const("win_j", win_j)], "votes_j")], "votes")
    total = g.op("MatMul", [dec, g.const("conf", conf)], "confidence")
    scaled = g.op("Div", [total, g.op("Mul", [g.const("three", 3.0), g.op(
        "Add", [g.op("Abs", [total], "abs_conf"), g.const("one_c", 1.0)], "abs1")], "den")],
        "transformed")
    return g.op("Add", [votes, scaled], "f")


def _nystroem(est, g: _Graph, x: str) -> str:
    """K(x, landmarks) times the normalisation, then the linear SVM on those features."""
    if est.nystroem_ is not None:    # scikit-learn's Nystroem (random landmarks)
        ny = est.nystroem_
        if ny.kernel != "rbf":
            raise ConfigError(f"ONNX export of the {ny.kernel!r} kernel is not implemented")
        Kx = _rbf(g, x, ny.components_, float(ny.gamma))
        norm = np.asarray(ny.normalization_, dtype=np.float64).T
    else:
        Kx = _rbf(g, x, est.landmarks_, float(est.gamma_))
        norm = np.asarray(est.normalization_, dtype=np.float64)
    F = g.op("MatMul", [Kx, g.const("normalization", norm)], "features")
    coef = np.atleast_2d(np.asarray(est.coef_, dtype=np.float64))
    return g.matmul_add(F, coef, est.intercept_, "f")


def _builder(est):
    """The graph builder of an estimator's class, or a one-line reason why there is none."""
    from llc_bench import models
    from llc_bench.models.llsvm import _LocalSVMBase

    if isinstance(est, _LocalSVMBase):
        return _local
    builders = {models.LinearSVMClassifier: _linear, models.ML3Classifier: _ml3,
                models.OCCClassifier: _occ, models.LDKLClassifier: _ldkl,
                models.ClusteredSVMClassifier: _csvm, models.KernelSVMClassifier: _kernel,
                models.NystroemSVMClassifier: _nystroem}
    if type(est) in builders:
        return builders[type(est)]
    reasons = {
        models.SVMKNNClassifier: "it trains a LIBLINEAR model on each query row's neighbours "
                                 "at prediction time, which no fixed graph computes",
        models.LCCLinearSVMClassifier: "its LLC codes solve a k x k linear system per row, "
                                       "and ONNX has no batched solve",
        models.LCCLassoSVMClassifier: "its LCC codes solve a weighted LASSO per row by "
                                      "coordinate descent, which no fixed graph computes",
    }
    raise ConfigError(f"ONNX export of {type(est).__name__} is not possible: "
                      f"{reasons.get(type(est), 'no graph for this class')}")


def input_columns(pre: dict | None) -> list[str] | None:
    """The columns the graph's input X takes, in order (the model file's
    ``preprocess.input_columns``; derived for a file written before it was kept)."""
    from llc_bench.data.formats import input_columns as columns_of

    if not pre:
        return None
    if "input_columns" in pre:
        return pre["input_columns"]
    if pre.get("format") != "csv":
        return None
    return columns_of(pre.get("feature_names"), pre["options"].get("one_hot_columns"),
                      int(pre["n_features"]), pre["options"])


def _input_doc(pre: dict | None, columns: list[str] | None) -> str:
    """The doc string of the graph's input X."""
    doc = ("the raw features (float64, one row per sample), before the saved preprocessing, "
           "which the graph applies")
    if columns:
        doc += f"; its {len(columns)} columns: {', '.join(columns)}"
    if pre and pre["options"].get("one_hot_columns"):
        doc += (" (a one-hot column as one 0/1 indicator column per category of the "
                "training file, name=category: the graph does no encoding)")
    return doc


def export_onnx(model_path, out, echo=None, config_dirs=()) -> Path:
    """Write the ONNX graph of a model file to ``out`` (checked with onnx's checker); the
    columns its input takes are in the input's doc string and the model's metadata
    (``input_columns``). ``echo``: says so for a one-hot model.  ``config_dirs``: a user's
    config dirs, whose classes the model file may hold (``model_files.trusted_classes``)."""
    try:
        import onnx
    except ImportError:
        raise ConfigError("ONNX export needs the onnx package: pip install onnx") from None
    from onnx import TensorProto

    from llc_bench.files import check_not_input

    check_not_input(out, {"model file": model_path}, "--onnx")
    model, meta = load_model(model_path, config_dirs)
    est = base_estimator(model)
    try:
        build = _builder(est)
    except ConfigError as err:
        raise ConfigError(f"{model_path}: {err}") from None
    g = _Graph()
    x = _preprocess(meta.get("preprocess"), g, "X")
    f = build(est, g, x)
    n_out = len(est.classes_) if len(est.classes_) > 2 else 1
    shape = np.array([-1] if n_out == 1 else [-1, n_out], dtype=np.int64)
    g.op("Reshape", [f, g.const("out_shape", shape)], "decision")
    helper = g.helper
    n_features = int(getattr(est, "n_features_in_", 0))
    pre = meta.get("preprocess")
    columns = input_columns(pre)
    graph = helper.make_graph(
        g.nodes, "llc_bench",
        [helper.make_tensor_value_info("X", TensorProto.DOUBLE, [None, n_features],
                                       doc_string=_input_doc(pre, columns))],
        [helper.make_tensor_value_info("decision", TensorProto.DOUBLE,
                                       [None] if n_out == 1 else [None, n_out])], g.inits)
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                   producer_name="llc-bench")
    if columns:
        helper.set_model_props(onnx_model, {"input_columns": json.dumps(columns)})
    onnx.checker.check_model(onnx_model, full_check=True)
    from llc_bench.files import atomic_write_bytes

    out = Path(out)
    atomic_write_bytes(out, onnx_model.SerializeToString())
    vocabulary = (pre or {}).get("options", {}).get("one_hot_columns")
    if echo is not None and vocabulary:
        shown = ", ".join(columns[:8]) + (", ..." if len(columns) > 8 else "") if columns \
            else f"{n_features} columns"
        echo(f"llc-bench: note: {out}'s input X takes the one-hot columns "
             f"({', '.join(vocabulary)}) expanded, one 0/1 indicator column per training "
             f"category, as the model does: {shown} (the list is in the graph's metadata, "
             "input_columns, and in the input's doc string)", file=sys.stderr)
    return out
