"""The house has the floors the design states, read from the imports themselves (``ast``, nothing run).

- ``proofs`` is the ground floor: SymPy only. No module of it imports ``numeric`` or ``kernels`` (or
  NumPy, SciPy, torch, triton), at module level, inside a function or under TYPE_CHECKING, with one
  stated exception: the top floor, ``proofs/report/`` and ``proofs/cli.py`` (with ``proofs/__main__.py``),
  the one place that joins the three layers. It lives inside ``proofs`` only because the user's card
  fixes the top-level packages.
- Above it, one floor each: proofs < numeric < kernels < top floor. ``numeric`` adds NumPy/SciPy and
  never imports ``kernels``, torch or triton (not even inside a function); ``kernels`` may import
  ``numeric`` (a proved bound evaluated on NumPy arrays is what a kernel check builds on). Neither
  imports the top floor.
- No import cycles anywhere among the project's modules (imports at any level count: a cycle through a
  function-level import is still two modules that cannot be understood apart).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("proofs", "numeric", "kernels")
TOP_FLOOR = ("proofs.report", "proofs.cli", "proofs.__main__")  # the stated exception
HEAVY = ("numpy", "scipy", "torch", "triton")  # what importing proofs must not pull in
DEVICE = ("torch", "triton")  # what only kernels (and the top floor) may import
FLOORS = ("proofs", "numeric", "kernels")  # bottom to top: a layer imports only those at or below it


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((REPO / pkg).rglob("*.py"))
            if "tests" not in p.relative_to(REPO).parts}


def imports_of(path: Path, name: str, known=None) -> set[str]:
    """Every module ``path`` imports, at any depth of its code. ``from X import Y`` counts X.Y where
    that is a module of ``known`` and X for any other name (X's ``__init__`` runs first either way,
    but a package's ``__init__`` re-exporting its modules is not a cycle). Relative imports are
    resolved against ``name``."""
    known = known or {}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            submodules = {f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known}
            found |= submodules
            if len(submodules) < len(node.names):
                found.add(base)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                found.add(node.args[0].value)
    return found


def graph() -> dict[str, set[str]]:
    """Project module -> the project modules it imports."""
    modules = _modules()
    return {name: {m for m in imports_of(path, name, modules) if m in modules and m != name}
            for name, path in modules.items()}


def _on_top_floor(name: str) -> bool:
    return any(name == top or name.startswith(top + ".") for top in TOP_FLOOR)


def _layer(module: str) -> str:
    return module.split(".")[0]


def layering_violations(g: dict[str, set[str]], external: dict[str, set[str]]) -> list[str]:
    bad = []
    for name, deps in sorted(g.items()):
        layer = _layer(name)
        if layer == "proofs" and not _on_top_floor(name):
            bad += [f"{name} imports {d} (proofs stands on nothing)" for d in sorted(deps) if _layer(d) != "proofs"]
            bad += [f"{name} imports {d} (proofs needs SymPy only)" for d in sorted(external.get(name, ()))
                    if d.split(".")[0] in HEAVY]
        elif layer in ("numeric", "kernels"):
            bad += [f"{name} imports {d} (a layer stands on the floors below it: proofs < numeric < kernels)"
                    for d in sorted(deps) if FLOORS.index(_layer(d)) > FLOORS.index(layer)]
            bad += [f"{name} imports {d} (only the top floor looks down on the other layers)" for d in sorted(deps)
                    if _on_top_floor(d)]
            if layer == "numeric":
                bad += [f"{name} imports {d} (only kernels imports torch and triton)"
                        for d in sorted(external.get(name, ())) if d.split(".")[0] in DEVICE]
    return bad


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return sorted(out)


def _external() -> dict[str, set[str]]:
    return {name: imports_of(path, name) for name, path in _modules().items()}


def test_each_layer_imports_only_the_floors_below_it_and_only_the_top_floor_joins_them_all():
    assert layering_violations(graph(), _external()) == []


def test_no_import_cycles():
    assert cycles(graph()) == []


# --------------------------------------------------------------------------- the checks can fail


def test_the_layering_check_catches_an_upward_import_even_inside_a_function(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from numeric import confirm\n    import torch\n")
    deps = imports_of(src, "proofs.theorems.m", {"numeric": None})
    g = {"proofs.theorems.m": {d for d in deps if d.split(".")[0] in PACKAGES}, "numeric": set(),
         "proofs.report.gather": {"numeric", "kernels"}, "kernels": {"numeric"}, "numeric.x": {"proofs.cli"}}
    bad = layering_violations(g, {"proofs.theorems.m": deps})
    assert "proofs.theorems.m imports numeric (proofs stands on nothing)" in bad
    assert "proofs.theorems.m imports torch (proofs needs SymPy only)" in bad
    assert "numeric.x imports proofs.cli (only the top floor looks down on the other layers)" in bad
    assert not any(b.startswith("proofs.report.gather") for b in bad)  # the stated exception
    assert not any(b.startswith("kernels ") for b in bad)  # kernels stands on numeric


def test_the_layering_check_catches_numeric_importing_kernels_or_torch_inside_a_function(tmp_path):
    src = tmp_path / "rounding.py"
    src.write_text("import numpy as np\n\ndef confirm():\n    import torch.nn.functional as F\n"
                   "    from kernels.harness import reference\n    import triton\n")
    known = {"kernels.harness.reference": None, "kernels.harness": None}
    deps = imports_of(src, "numeric.rounding", known)
    assert {"numpy", "torch.nn.functional", "kernels.harness.reference", "triton"} <= deps
    g = {"numeric.rounding": {d for d in deps if d.split(".")[0] in PACKAGES}, "kernels.harness.reference": set()}
    bad = layering_violations(g, {"numeric.rounding": deps})
    assert bad == ["numeric.rounding imports kernels.harness.reference "
                   "(a layer stands on the floors below it: proofs < numeric < kernels)",
                   "numeric.rounding imports torch.nn.functional (only kernels imports torch and triton)",
                   "numeric.rounding imports triton (only kernels imports torch and triton)"]


def test_the_cycle_check_finds_a_cycle_through_a_relative_and_a_function_level_import(tmp_path):
    pkg = tmp_path / "kernels" / "decode"
    pkg.mkdir(parents=True)
    (pkg / "api.py").write_text("from ..flash import api\n")
    known = {"kernels.flash.api": None, "kernels.flash": None}
    assert imports_of(pkg / "api.py", "kernels.decode.api", known) == {"kernels.flash.api"}
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(g) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("module", ["proofs.report.gather", "proofs.cli"])
def test_the_top_floor_is_where_the_layers_meet(module):
    # The exception is not hypothetical: these are the modules that do look at numeric and kernels.
    assert {"numeric", "kernels"} & {_layer(d) for d in graph()[module]}
