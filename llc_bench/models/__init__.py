
from .llsvm import LCCSVMClassifier, LLSVMClassifier  # noqa: E402,F401
from .ml3 import ML3Classifier, select_lambda  # noqa: E402,F401
from .occ import OCCClassifier  # noqa: E402,F401
