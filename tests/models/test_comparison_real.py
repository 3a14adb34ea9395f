"""SVM-KNN and CSVM on real data through the runner, against LLC-SAPL Table 2 (seed 0).

Shorter grids than the presets' to keep the suite fast; they contain the values the full
grids select on these splits (SVM-KNN on banana: K = 40 with the local C = 1; CSVM: C = 32
on banana with conf/tuned/csvm_banana.yaml's L = 16, C = 0.5 on magic04 with L = 8).
"""



def test_svm_knn_on_banana(real_run):
    # paper: 90.61; SVM-KNN trains its local SVMs at test time (LLC-SAPL Table 3: slowest)
    record = real_run("dataset=banana", "model=svm_knn", "trainer.K_grid=[20,40,80]")
    m = record["metrics"]
    assert m["test_accuracy"] >= 0.895
    assert 0.0 < m["test_hinge"] < 0.4
    selected = record["fit_info"]["selected"]  # K and the local C by leave-one-out
    C_grid = record["config"]["trainer"]["C_grid"]
    assert selected["n_neighbors"] in (20, 40, 80) and selected["C"] in C_grid
    assert len(C_grid) == 6 and len(record["fit_info"]["cv"]["params"]) == 3 * len(C_grid)
    assert record["fit_info"]["cv"]["n_validation_points"] == 1000
    assert record["timings"]["test_total"] > 0


def test_csvm_on_banana(real_run):
    # paper: 89.64 ± 0.17
    record = real_run("dataset=banana", "model=csvm", "trainer.C_grid=[8,32]")
    m = record["metrics"]
    assert m["test_accuracy"] >= 0.89
    assert m["test_hinge"] < 0.35
    assert record["fit_info"]["selected"]["n_clusters"] == 16  # conf/tuned/csvm_banana.yaml
    assert record["model_size"]["n_parameters"] == 16 * 3


def test_csvm_on_magic04(real_run):
    # paper: 85.01 ± 0.51
    record = real_run("dataset=magic04", "model=csvm", "trainer.C_grid=[0.5,2]")
    assert record["metrics"]["test_accuracy"] >= 0.84
