"""`llc-bench predict` and `llc-bench export`: apply a kept model, write it as ONNX."""

from __future__ import annotations

from llc_bench.cli.arguments import command_parser


def _model_file_parser(command: str, description: str):
    """The parser of a command on a kept model: its first argument is the model file."""
    parser = command_parser(command, description)
    parser.add_argument("model", help="a model file (.llcm)")
    parser.add_argument("--config-dir", action="append", default=[], metavar="DIR",
                        help="a config dir of your own (as given to hydra.searchpath) whose "
                        "trainer/ and coding/ files name your classes as _target_: a model "
                        "file may then hold them (repeatable)")
    return parser


def predict_command(argv: list[str]) -> None:
    """Apply a model kept by `llc-bench run ... save_model=true`
    (<results_dir>/models/<hash>.llcm) to a CSV or svmlight file read with the training
    file's options; writes one row per input (predicted label, decision values, and the
    file's label when it has one) and prints the accuracy when the file has labels. The file
    is read and scored in blocks of lines (files larger than memory); --out appears whole or
    not at all."""
    from llc_bench.serving.predict import predict_file

    parser = _model_file_parser("predict", predict_command.__doc__)
    parser.add_argument("data", help="a data file in the training file's format")
    parser.add_argument("--out", help="write the predictions here (CSV; default, or -: "
                        "stdout)")
    args = parser.parse_args(argv)
    predict_file(args.model, args.data, out=args.out, echo=print,
                 config_dirs=args.config_dir)


def export_command(argv: list[str]) -> None:
    """Write a kept model (save_model=true) as an ONNX graph that takes the raw features
    (float64) and returns the decision values, the saved preprocessing included: every
    family but SVM-KNN, lcc_svm_lcc and lcc_lasso (linear, kernel, Nystroem, LL-SVM, LCC+SVM,
    LLC-SAPL, LLC-JO, ML3, OCC, LDKL, CSVM)."""
    from llc_bench.serving.onnx_export import export_onnx

    parser = _model_file_parser("export", export_command.__doc__)
    parser.add_argument("--onnx", required=True, help="the ONNX file to write")
    args = parser.parse_args(argv)
    print(f"wrote {export_onnx(args.model, args.onnx, echo=print, config_dirs=args.config_dir)}")
