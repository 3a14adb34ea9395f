"""Linear SVM + LCC (LLC codes, LCC's own codes) and Nyström + linear SVM on real data.

One seed each; the CV grids are cut to the values the full default grids select (3 seeds,
reported with the commit), so the suite stays fast.  Reference rows:
LLC-SAPL Table 2 (kernel SVM: banana 91.05, magic04 86.70; linear SVM: banana 55.29;
LCC+SVM with soft-assignment codes: banana 89.47), ML3 Table 1 (usps LIBLINEAR
one-vs-all 8.37% error = 91.63%), OCC Table 2 (linear SVM on LLC codes, 512 anchors: usps
5.78% error = 94.22%).
"""



def test_nystroem_on_banana(real_run):
    # kernel SVM 91.05; full grids, seeds 0-2: 90.72 / 90.44 / 90.15 (CV picks gamma factor 3
    # with C = 0.1 / 1 on seeds 0-1, factor 0.3 with C = 100 on seed 2; all within 0.3 point)
    r = real_run("dataset=banana", "model=nystroem", "trainer.gamma_factors=[1,3]",
            "trainer.C_grid=[0.1,1]")
    assert r["metrics"]["test_accuracy"] >= 0.89
    assert r["model_size"]["n_components"] == 500


def test_nystroem_on_magic04_is_within_a_point_of_the_kernel_svm(real_run):
    # kernel SVM 86.70 (linear SVM 79.30). The full 5 x 5 CV picks gamma = 0.1-0.3 / (D Var X)
    # with C = 100-1000 (CV accuracies within 0.5 point for C >= 10): 86.77 / 87.44 / 86.62 on
    # seeds 0-2. 500 landmarks approximate the kernel well enough to stay within 1 point.
    r = real_run("dataset=magic04", "model=nystroem", "trainer.gamma_factors=[0.1]",
            "trainer.C_grid=[100]")
    assert r["metrics"]["test_accuracy"] >= 0.857


def test_lcc_codes_svm_on_banana(real_run):
    # linear SVM 55.29, soft-assignment LCC+SVM 89.47, kernel SVM 91.05; ours (512 anchors,
    # k = 5, full C grid), seeds 0-2: 90.15 / 90.04 / 89.59 (CV picks C = 0.5)
    r = real_run("dataset=banana", "model=lcc_svm_lcc", "trainer.C_grid=[0.5]")
    assert r["metrics"]["test_accuracy"] >= 0.885
    assert r["fit_info"]["coding"]["k"] == 5


def test_lcc_codes_svm_on_usps(real_run):
    # raw features (conf/tuned/lcc_svm_lcc_usps.yaml, as OCC/LL-SVM). Linear SVM 91.63 (ML3
    # Table 1); OCC Table 2's linear SVM on LLC codes (512 anchors) 94.22; ours (full C grid,
    # CV picks C = 2), seeds 0-2: 93.22 / 94.02 / 93.32. Threshold: clearly above the linear
    # SVM (+0.9 point) and within 1.7 points of the paper's LLC row.
    r = real_run("dataset=usps", "model=lcc_svm_lcc", "trainer.C_grid=[2.0]")
    assert r["config"]["dataset"]["scaling"] == "none"
    assert r["metrics"]["test_accuracy"] >= 0.925
    assert r["model_size"]["n_anchors"] == 512


def test_lcc_own_codes_svm_on_banana(real_run):
    # LCC's own coding (model=lcc_lasso: the weighted LASSO, mu = 0.3, 512 k-means anchors);
    # soft-assignment LCC+SVM 89.47 (LLC-SAPL Table 2); ours (full C grid, CV picks C = 0.5),
    # seeds 0-2: 89.47 / 89.02 / 88.91. In 2-D three active anchors are affinely dependent
    # (the active-set step is refused) and about 1 % of the rows stop at max_sweeps.
    r = real_run("dataset=banana", "model=lcc_lasso", "tune=off",
            "trainer.C_grid=[0.5]")
    assert r["metrics"]["test_accuracy"] >= 0.885
    counts = r["fit_info"]["coding"]["train_codes"]
    assert counts["not_converged"] <= 0.02 * r["data"]["n_train"] and counts["mean_nnz"] > 1
