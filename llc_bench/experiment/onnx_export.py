"""``llc-bench export MODEL_FILE --onnx OUT``: a kept model as an ONNX graph.

The graph takes the raw features (float64, shape (n, D)) as a file would give them, applies
the saved preprocessing (value scale, the training split's scaler) and returns the decision
values (``decision``: (n,) for two classes, (n, C) otherwise), built from the ``onnx``
package's operators and checked with its checker:

* linear (LIBLINEAR): ``X Wᵀ + b``;
* LL-SVM, LCC+SVM, LLC-SAPL (fixed or learned anchors) with the ``inverse_distance`` or
  ``soft_knn`` coding: squared distances to the anchors (one MatMul),
  ``TopK(largest=0)`` for the k nearest, their weights (LL-SVM: 1/d^(p/2) with the exact
  hit rule, SAPL eq. 2: exp(-β(d - d_min))), normalised, and
  f_c(x) = Σ_a γ_a (W_c[a]·x + b_c[a]) over the k active anchors (LL-SVM eq. 8).

Other families (LLC-JO's adaptive k*, ML3, OCC, LDKL, CSVM, SVM-KNN, the kernel SVM and
Nyström) are refused with one line for now.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from llc_bench.errors import ConfigError
from llc_bench.experiment.model_files import base_estimator, load_model

OPSET = 18


def _graph_builder():
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits = [], []

    def const(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(kind, inputs, output, **attrs):
        """A node; ``output`` is a name, or a list of names for several outputs."""
        outputs = output if isinstance(output, list) else [output]
        nodes.append(helper.make_node(kind, inputs, outputs, **attrs))
        return output

    return nodes, inits, const, op, helper, TensorProto


def _preprocess(pre: dict | None, const, op, x: str) -> str:
    """Nodes that turn the raw features into the model's (value scale, scaler)."""
    if not pre:
        return x
    if pre.get("value_scale") is not None:
        x = op("Mul", [x, const("value_scale", np.float64(pre["value_scale"]))], "x_scaled")
    if pre.get("mean") is not None:
        x = op("Sub", [x, const("mean", np.asarray(pre["mean"], dtype=np.float64))], "x_centred")
    if pre.get("scale") is not None:
        x = op("Div", [x, const("scale", np.asarray(pre["scale"], dtype=np.float64))], "x_std")
    return x


def _linear(est, const, op, x: str) -> str:
    coef = np.asarray(est.coef_, dtype=np.float64)
    coef = coef.reshape(-1, coef.shape[-1])
    out = op("MatMul", [x, const("coef_T", coef.T.copy())], "xw")
    return op("Add", [out, const("intercept", np.asarray(est.intercept_,
                                                          dtype=np.float64).ravel())], "f")


def _soft_knn_weights(coding, const, op, d, xx, vv) -> str:
    """LLC-SAPL eq. 2 with d_min subtracted (``SoftKNNCoding``)."""
    d_min = op("ReduceMin", [d, const("axis1b", np.array([1]))], "d_min", keepdims=1)
    shifted = op("Mul", [op("Sub", [d, d_min], "dd"),
                         const("minus_beta", np.float64(-coding.beta_))], "bd")
    return op("Exp", [shifted], "w_raw")


def _inverse_distance_weights(coding, const, op, d, xx, vv) -> str:
    """1/||x - v||^p, all weight on an anchor x sits on (``InverseDistanceCoding``)."""
    from llc_bench.coding.local import HIT_RTOL

    scale = op("Add", [xx, op("Gather", [const("vv_flat", vv), "idx"], "vv_idx")],
               "hit_scale")
    hit = op("LessOrEqual", [d, op("Mul", [scale, const("rtol", np.float64(HIT_RTOL))],
                                   "tol")], "hit")
    inv = op("Pow", [d, const("minus_half_p", np.float64(-0.5 * coding.power))], "inv")
    w0 = op("Where", [hit, const("zero_b", np.float64(0.0)), inv], "w0")
    hitf = op("Cast", [hit], "hitf", to=11)  # double
    any_hit = op("ReduceMax", [hitf, const("axis1c", np.array([1]))], "any_hit",
                 keepdims=1)
    return op("Where", [op("Cast", [any_hit], "any_hit_b", to=9), hitf, w0], "w_raw")


#: coding name -> the ONNX nodes of its unnormalised weights over the k nearest.
WEIGHTS = {"soft_knn": _soft_knn_weights, "inverse_distance": _inverse_distance_weights}


def _local(est, const, op, x: str) -> str:
    """LL-SVM eq. 8 over the k nearest anchors."""
    coding = est.coding_
    if coding.name not in WEIGHTS:
        raise ConfigError(f"ONNX export of the {coding.name!r} coding is not implemented "
                          f"({' and '.join(WEIGHTS)} are)")
    V = np.asarray(est.anchors_, dtype=np.float64)
    m, D = V.shape
    k = min(coding.k, m)
    vv = np.einsum("ij,ij->i", V, V)
    xx = op("ReduceSum", [op("Mul", [x, x], "x2"), const("axis1", np.array([1]))], "xx",
            keepdims=1)
    g = op("MatMul", [x, const("anchors_T", V.T.copy())], "g")
    d2 = op("Add", [op("Sub", [xx, op("Mul", [g, const("two", np.float64(2.0))], "g2")],
                       "d2a"), const("vv", vv[None, :])], "d2")
    d_raw, _ = op("TopK", [d2, const("k", np.array([k], dtype=np.int64))], ["d_raw", "idx"],
                  axis=1, largest=0, sorted=1)
    d = op("Max", [d_raw, const("zero", np.float64(0.0))], "d")
    w = WEIGHTS[coding.name](coding, const, op, d, xx, vv)
    w = op("Div", [w, op("ReduceSum", [w, const("axis1d", np.array([1]))], "w_sum",
                         keepdims=1)], "w")
    W = np.asarray(est.W_, dtype=np.float64)            # (n_out, m, D)
    b = np.asarray(est.b_, dtype=np.float64)            # (n_out, m)
    n_out = W.shape[0]
    if not est._use_W_fit:
        W = np.zeros_like(W)
    h = op("Add", [op("MatMul", [x, const("W_T", W.reshape(n_out * m, D).T.copy())], "xw"),
                   const("b_flat", b.reshape(-1))], "h_flat")      # (n, n_out·m)
    h = op("Reshape", [h, const("h_shape", np.array([-1, n_out, m], dtype=np.int64))], "h")
    idx3 = op("Unsqueeze", ["idx", const("axis1e", np.array([1]))], "idx3")   # (n, 1, k)
    shape = op("Shape", [h], "h_dims")
    target = op("Concat", [op("Slice", [shape, const("s0", np.array([0])),
                                        const("s1", np.array([2]))], "n_nout"),
                           const("kk", np.array([k], dtype=np.int64))], "idx_shape", axis=0)
    idx3 = op("Expand", [idx3, target], "idx3e")
    h_act = op("GatherElements", [h, idx3], "h_act", axis=2)              # (n, n_out, k)
    w3 = op("Unsqueeze", [w, const("axis1f", np.array([1]))], "w3")
    return op("ReduceSum", [op("Mul", [h_act, w3], "hw"), const("axis2", np.array([2]))], "f",
              keepdims=0)


def export_onnx(model_path, out) -> Path:
    """Write the ONNX graph of a model file to ``out`` (checked with onnx's checker)."""
    try:
        import onnx
    except ImportError:
        raise ConfigError("ONNX export needs the onnx package: pip install onnx") from None
    from llc_bench.models import LinearSVMClassifier
    from llc_bench.models.llsvm import _LocalSVMBase

    model, meta = load_model(model_path)
    est = base_estimator(model)
    nodes, inits, const, op, helper, T = _graph_builder()
    x = _preprocess(meta.get("preprocess"), const, op, "X")
    if isinstance(est, LinearSVMClassifier):
        f = _linear(est, const, op, x)
    elif isinstance(est, _LocalSVMBase):
        f = _local(est, const, op, x)
    else:
        raise ConfigError(f"{model_path}: ONNX export of {type(est).__name__} is not "
                          "implemented yet (linear, LL-SVM, LCC+SVM and LLC-SAPL are)")
    n_out = len(est.classes_) if len(est.classes_) > 2 else 1
    if n_out == 1:
        f = op("Reshape", [f, const("flat", np.array([-1], dtype=np.int64))], "decision")
    else:
        f = op("Identity", [f], "decision")
    n_features = int(getattr(est, "n_features_in_", 0))
    graph = helper.make_graph(
        nodes, "llc_bench", [helper.make_tensor_value_info("X", T.DOUBLE, [None, n_features])],
        [helper.make_tensor_value_info("decision", T.DOUBLE,
                                       [None] if n_out == 1 else [None, n_out])], inits)
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                   producer_name="llc-bench")
    onnx.checker.check_model(onnx_model, full_check=True)
    from llc_bench.files import atomic_write_bytes

    out = Path(out)
    atomic_write_bytes(out, onnx_model.SerializeToString())
    return out
