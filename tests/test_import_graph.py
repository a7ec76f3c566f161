"""The package's imports run one way: no module imports (at the top or inside a
function) a module that imports it back, and the stages form a chain without circles.

Read from the source, not from ``sys.modules``, so imports hidden inside functions
count. ``if TYPE_CHECKING:`` blocks are left out (they never run), and so is the
import of a package's ``__init__`` that Python makes on the way to a submodule."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "dnnc"

STAGES = ("frontend", "passes", "partition", "backends", "runtime", "artifact", "specs", "tuning", "cli")
"""The stages named by their package (or module) under ``dnnc``."""


def module_files() -> dict[str, Path]:
    files = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        files[".".join(parts)] = path
    return files


def _runtime_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Import statements that can run (not under ``if TYPE_CHECKING``)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in skipped:
            yield node


def import_graph() -> dict[str, set[str]]:
    """dnnc module -> the dnnc modules it imports."""
    files = module_files()
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in _runtime_imports(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                submodules = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in files]
                targets = submodules if len(submodules) == len(node.names) else [base, *submodules]
            for target in targets:
                while target not in files and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in files and target != name and not name.startswith(target + "."):
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
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
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def stage_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in STAGES else None


def test_no_module_imports_a_module_that_imports_it_back() -> None:
    assert cycles(import_graph()) == []


def test_stages_import_one_way() -> None:
    graph = import_graph()
    stages: dict[str, set[str]] = {s: set() for s in STAGES}
    examples: dict[tuple[str, str], str] = {}
    for module, targets in graph.items():
        for target in targets:
            a, b = stage_of(module), stage_of(target)
            if a and b and a != b:
                stages[a].add(b)
                examples.setdefault((a, b), f"{module} -> {target}")
    circles = cycles(stages)
    assert circles == [], [[examples[(a, b)] for a in circle for b in circle if (a, b) in examples] for circle in circles]


def test_the_checker_finds_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


COMPILER = ("frontend", "pipeline", "partition", "passes", "specs", "tuning", "cli", "api")


def test_loading_an_artifact_imports_no_part_of_the_compiler(tmp_path: Path) -> None:
    """A process that loads and runs an artifact pays for the runtime only."""
    import subprocess
    import sys

    import torch

    import dnnc

    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval()
    path = dnnc.compile(model, (torch.randn(2, 8),), device="cpu").save(tmp_path / "m.dnnc")
    script = (
        "import sys, torch, dnnc\n"
        f"out = dnnc.load({str(path)!r}, device='cpu')(torch.randn(2, 8))\n"
        "assert out.shape == (2, 8)\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('dnnc.'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = done.stdout.split()
    assert "dnnc.loading" in loaded
    assert [m for m in loaded if m.split(".")[1] in COMPILER] == []


def test_a_rule_registered_twice_is_named() -> None:
    import pytest

    from dnnc.rules import RuleTable

    table: RuleTable[str, object] = RuleTable("sample")

    @table.rule("a", "b")
    def first() -> None: ...

    assert table["a"] is first and table["b"] is first
    with pytest.raises(ValueError, match="two sample rules for b: .*first and .*second"):

        @table.rule("b")
        def second() -> None: ...


BACKENDS = ("cudnn", "triton", "reference")


def test_other_stages_use_a_backend_through_its_package() -> None:
    """``dnnc.backends.<x>`` is the backend's surface; its modules are its own."""
    reaching = sorted(
        f"{module} -> {target}"
        for module, targets in import_graph().items()
        for target in targets
        for backend in BACKENDS
        if target.startswith(f"dnnc.backends.{backend}.") and not module.startswith(f"dnnc.backends.{backend}")
    )
    assert reaching == []


def test_every_name_a_backend_offers_resolves() -> None:
    """The lazily imported names (cuDNN's runtime, Triton's launch) are checked here,
    also on a machine where no code path would ask for them (the cuDNN frontend and
    Triton's compiler load only when a graph or kernel is built)."""
    import importlib

    for backend in BACKENDS:
        package = importlib.import_module(f"dnnc.backends.{backend}")
        for name in package.__all__:
            assert getattr(package, name) is not None, f"dnnc.backends.{backend}.{name}"
