"""llc-bench: reproducible experiments for locally linear SVM classifiers."""

__version__ = "0.1.0"
