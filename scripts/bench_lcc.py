"""LCC coding throughput: rows/s of the LCC codes (Yu, Zhang & Gong 2009; the
weighted LASSO of ``llc_bench.coding.lcc``) on MNIST (mnist_40k, pixels / 255) at 512 and
4096 anchors, beside the LLC codes of ``lcc_svm_lcc`` (Wang et al. 2010's approximated
encoding, k = 48, reg = 1e-2 as its MNIST preset) on the same rows and anchors, in the same
process, so the ratio holds on a shared machine where the absolute figures do not.

Anchors: k-means on a seeded sample of ``--kmeans-rows`` training rows (the benchmark is the
coding, not k-means; the table runs use every training row).  Each coding is timed
``--repeats`` times on the first ``--rows`` test rows after a warm-up call (numba compiled,
caches warm); the median is reported, with the LCC codes' mean non-zeros per row and the
rows whose working set grew beyond the ``n_candidates`` nearest.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        python scripts/bench_lcc.py --mirror /work/shared/datasets --mu 0.3
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def _timed(fn, repeats):
    fn()  # warm-up: compilation and caches
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", help="dataset mirror (also $LLC_BENCH_MIRROR)")
    parser.add_argument("--anchors", type=int, nargs="+", default=[512, 4096])
    parser.add_argument("--mu", type=float, default=0.3, help="LCC's locality weight")
    parser.add_argument("--n-candidates", type=int, default=32)
    parser.add_argument("--rows", type=int, default=2000, help="test rows coded per timing")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--kmeans-rows", type=int, default=10000)
    args = parser.parse_args(argv)
    if args.mirror:
        os.environ["LLC_BENCH_MIRROR"] = args.mirror

    from llc_bench.coding.anchors import fit_anchors
    from llc_bench.coding.lcc import lcc_codes
    from llc_bench.coding.llc import llc_codes
    from llc_bench.data import load_dataset
    from llc_bench.experiment.environment import thread_settings

    ds = load_dataset("mnist_40k", seed=0)
    X = ds.X_test[:args.rows]
    print(f"# mnist_40k, {len(X)} test rows, mu = {args.mu}, n_candidates = "
          f"{args.n_candidates}; threads {thread_settings().get('single')}; "
          f"load {os.getloadavg()[0]:.2f}")
    print(f"{'anchors':>8} {'LCC rows/s':>11} {'LLC rows/s':>11} {'LCC / LLC':>10} "
          f"{'nnz/row':>8} {'grown':>7}")
    for m in args.anchors:
        V, _ = fit_anchors(ds.X_train, m, random_state=0, sample_rows=args.kmeans_rows,
                           _memo=False)
        info: dict = {}
        t_lcc, _ = _timed(lambda V=V, info=info: lcc_codes(X, V, args.mu, args.n_candidates,
                                                           info=info), args.repeats)
        t_llc, _ = _timed(lambda V=V: llc_codes(X, V, k=48, reg=1e-2), args.repeats)
        print(f"{m:>8} {len(X) / t_lcc:>11.0f} {len(X) / t_llc:>11.0f} {t_llc / t_lcc:>10.2f} "
              f"{info['mean_nnz']:>8.1f} {info['rows_expanded'] / len(X):>7.1%}")


if __name__ == "__main__":
    main()
