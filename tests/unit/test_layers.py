"""The package's layers import downward only (DESIGN.md, "Layout"): every import of every module, at module level
and inside functions, goes to its own layer or one listed before it, and no modules import each other in a circle.
Function-level imports are for the heavy optional dependencies only, never for the package's own modules."""

import ast
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "fairseq_tree"

#: lowest first: a layer may import itself and the layers before it
LAYERS = ["utils", "safe_loading", "text", "trees", "evaluation", "view", "data", "modules", "inference", "parsers",
          "stanza_train", "side_channels", "models", "optim", "criterions", "tasks", "preprocess", "hub", "compat",
          "cli"]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules():
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(path: Path, known):
    """-> [(imported module, line, inside a function)] of fairseq_tree modules (``from a import b`` resolves to the
    submodule a.b when there is one)."""
    out = []

    def visit(node, nested):
        for child in ast.iter_child_nodes(node):
            inner = nested or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.ImportFrom) and child.module and child.module.split(".")[0] == "fairseq_tree":
                for alias in child.names:
                    sub = f"{child.module}.{alias.name}"
                    out.append((sub if sub in known else child.module, child.lineno, inner))
            elif isinstance(child, ast.Import):
                out.extend((a.name, child.lineno, inner) for a in child.names if a.name.split(".")[0] == "fairseq_tree")
            visit(child, inner)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return out


def layer(module: str):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None  # None: the package root, which registers everything


def test_every_module_has_a_layer():
    missing = sorted({layer(m) for m in modules()} - set(LAYERS) - {None})
    assert not missing, f"add these folders/modules to LAYERS (and DESIGN.md): {missing}"


def test_imports_go_downward_only():
    known = modules()
    rank = {name: i for i, name in enumerate(LAYERS)}
    upward = []
    for mod, path in known.items():
        if layer(mod) is None:
            continue
        for target, line, nested in imports(path, known):
            if layer(target) is None:
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line}: imports the package root {target}")
            elif rank[layer(target)] > rank[layer(mod)]:
                how = "inside a function" if nested else "at module level"
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {layer(mod)} imports {target} {how}")
    assert not upward, "upward imports:\n" + "\n".join(upward)


def test_no_package_import_is_hidden_in_a_function():
    """Every fairseq_tree import is at module level, where the layer check and a reader see it; functions defer only
    the heavy optional dependencies (stanza, matplotlib, submitit, transformers)."""
    known = modules()
    hidden = [f"{path.relative_to(PACKAGE.parent)}:{line}: {target}" for mod, path in known.items()
              for target, line, nested in imports(path, known) if nested]
    assert not hidden, "imports of the package inside functions:\n" + "\n".join(hidden)


def test_no_circular_imports():
    known = modules()
    graph = defaultdict(set)
    for mod, path in known.items():
        for target, _, _ in imports(path, known):
            if target != mod and layer(target) is not None:
                graph[mod].add(target)
    cycles = strongly_connected(graph)
    assert not cycles, "modules importing each other in a circle:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def strongly_connected(graph):
    """Tarjan's algorithm -> the components of more than one node (the circles), each sorted."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def test_the_checker_sees_upward_and_circular_imports(tmp_path):
    """The checker itself: a function-level upward import and a two-module circle are found."""
    (tmp_path / "a.py").write_text("def f():\n    from fairseq_tree.cli import x\n")
    assert imports(tmp_path / "a.py", {"fairseq_tree.cli.x"}) == [("fairseq_tree.cli.x", 2, True)]
    assert strongly_connected({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
