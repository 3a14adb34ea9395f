"""The layer rules, read from the source (docs/architecture.md): every import of every
module of ``llc_bench``, function-local ones included, as an edge between modules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "llc_bench"

#: the deprecation aliases of moved modules (kept for one release): each only re-exports
#: its new module, and no module of the package imports one
ALIASES = {f"llc_bench.{old}": f"llc_bench.{new}" for old, new in (
    ("experiment.results", "store.results"), ("experiment.query", "store.query"),
    ("experiment.costs", "store.costs"), ("experiment.tune", "selection.tune"),
    ("experiment.tuning", "selection.tuning"), ("experiment.selection", "selection.selection"),
    ("experiment.presets", "selection.presets"), ("experiment.predict", "serving.predict"),
    ("experiment.onnx_export", "serving.onnx_export"),
    ("models.model_files", "serving.model_files"), ("arguments", "cli.arguments"),
    ("tables.command", "cli.tables"))}
#: the deprecated ``llc_bench.models.load`` calls ``llc_bench.serving.load``
ALIAS_EDGES = {("llc_bench.models", "llc_bench.serving")}
#: the layers, lowest first: a layer imports nothing from the layers after it
#: (experiment and selection share one layer: a run may select, selection runs configs)
LAYERS = (("llc_bench.data",), ("llc_bench.coding",), ("llc_bench.models",),
          ("llc_bench.serving", "llc_bench.store"),
          ("llc_bench.experiment", "llc_bench.selection"), ("llc_bench.tables",),
          ("llc_bench.cli",))


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: Path, modules) -> set[str]:
    """The ``llc_bench`` modules that ``name`` imports anywhere in its body."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # ``from pkg import sub`` imports the submodule ``pkg.sub``
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                       for a in node.names]
        else:
            continue
        out.update(t for t in targets if t in modules and t != name)
    return out


@pytest.fixture(scope="module")
def full_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


@pytest.fixture(scope="module")
def graph(full_graph) -> dict[str, set[str]]:
    """The import graph of the package without its deprecation aliases."""
    return {a: {b for b in targets if (a, b) not in ALIAS_EDGES}
            for a, targets in full_graph.items() if a not in ALIASES}

def _cycles(graph) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _crossing(graph, layer: str, forbidden: tuple[str, ...]) -> list[str]:
    return sorted(f"{a} -> {b}" for a, targets in graph.items()
                  if a == layer or a.startswith(layer + ".")
                  for b in targets if b.startswith(forbidden))


def test_the_scan_sees_function_local_imports(graph):
    assert "llc_bench.data.load" in graph and graph["llc_bench.models.llsvm"]
    assert any(b.startswith("llc_bench.models") for b in graph["llc_bench.experiment.runner"])


def test_no_module_imports_itself_back_through_others(graph):
    assert _cycles(graph) == []


def test_data_imports_nothing_from_the_layers_above_it(graph):
    above = tuple(p for layer in LAYERS[1:] for p in layer)
    assert _crossing(graph, "llc_bench.data", above) == []


def test_models_and_codings_see_rows_only_through_the_row_protocol(graph):
    assert _crossing(graph, "llc_bench.models", ("llc_bench.data.stream",)) == []
    assert _crossing(graph, "llc_bench.coding", ("llc_bench.data.stream",)) == []


def test_lower_layers_do_not_import_upper_ones(graph):
    for n, layer in enumerate(LAYERS):
        above = tuple(p for upper in LAYERS[n + 1:] for p in upper)
        for package in layer:
            assert _crossing(graph, package, above) == [], package


def test_only_the_cli_parses_arguments():
    """Library modules take values, not command lines: argparse lives in ``llc_bench.cli``."""
    parsing = []
    for name, path in _modules().items():
        if name == "llc_bench.cli" or name.startswith("llc_bench.cli.") or name in ALIASES:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            parsing += [name for n in names if n.split(".")[0] == "argparse"]
    assert parsing == []


def test_serving_and_the_store_do_not_import_each_other(graph):
    assert _crossing(graph, "llc_bench.serving", ("llc_bench.store",)) == []
    assert _crossing(graph, "llc_bench.store", ("llc_bench.serving",)) == []


def test_every_module_sits_in_a_layer(graph):
    top = {p for layer in LAYERS for p in layer}
    packages = {n.rsplit(".", 1)[0] for n, p in _modules().items()
                if p.parent != PACKAGE and p.name != "__init__.py"}
    assert {p for p in packages if p.count(".") == 1} <= top


def test_no_module_imports_a_deprecation_alias(full_graph):
    assert sorted(f"{a} -> {b}" for a, targets in full_graph.items() if a not in ALIASES
                  for b in targets if b in ALIASES) == []
    assert set(ALIASES) <= set(full_graph)  # every alias is still there


def test_an_alias_warns_and_is_its_new_module():
    import importlib
    import sys

    for old, new in ALIASES.items():
        sys.modules.pop(old, None)
        with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
            module = importlib.import_module(old)
        assert module is importlib.import_module(new) and sys.modules[old] is module
    from llc_bench.experiment.results import ResultsStore  # a name through the old path
    from llc_bench.store.results import ResultsStore as moved

    assert ResultsStore is moved


def test_the_package_and_its_commands_import_no_alias():
    """Every module of the package imported, and a few commands run, in a fresh process
    where an alias's warning is an error."""
    import subprocess
    import sys

    script = f"""
import importlib, warnings
warnings.filterwarnings("error", message="llc_bench[.]", category=DeprecationWarning)
for name in {sorted(set(_modules()) - set(ALIASES))!r}:
    importlib.import_module(name)
from llc_bench.cli import main
for argv in (["--help"], ["models"], ["tables", "--list"], ["run", "--cfg", "job"]):
    main(argv)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "deprecated" not in done.stderr
