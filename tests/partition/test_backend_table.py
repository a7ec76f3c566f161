"""The partitioner, the executor and the artifact see backends only through their
tables: no code outside a backend's own package compares anything with a backend's
name, and a backend added to the partitioner's table takes part by its role alone."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from dnnc.backends.interface import SpecChoice
from dnnc.ir import tcp
from dnnc.partition import backends as table
from dnnc.partition.backends import BACKENDS, ChoosableBackend
from dnnc.partition.candidates import Candidate, Role, graph_nodes, policy_candidates
from dnnc.partition.enumeration import enumerate_candidates
from dnnc.partition.spec_facts import library_roots
from dnnc.runtime.kernel_backends import KERNEL_BACKENDS
from tests.partition.test_partition_cpu import block_program

PACKAGE = Path(__file__).resolve().parents[2] / "dnnc"
TABLE_READERS = ["partition", "runtime", "artifact", "specs", "tuning", "pipeline.py", "api.py", "loading.py", "compiled.py"]
"""Where backends are chosen, built, recorded, loaded and tuned: over the tables, never by name."""


def _name_comparisons(path: Path, names: set[str]) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            for side in sides:
                if isinstance(side, ast.Constant) and side.value in names:
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_code_that_reads_the_tables_compares_with_a_backend_name() -> None:
    names = set(BACKENDS) | {b.name for b in KERNEL_BACKENDS}
    files = [
        p
        for entry in TABLE_READERS
        for p in ((PACKAGE / entry).rglob("*.py") if (PACKAGE / entry).is_dir() else [PACKAGE / entry])
    ]
    assert len(files) > 20
    found = [hit for path in files for hit in _name_comparisons(path, names)]
    assert not found, "branches on a backend's name:\n" + "\n".join(found)


def _matmul_library(nodes, index, libraries) -> list[Candidate]:
    """A second library that calls its own kernel for every matmul alone."""
    return [
        Candidate("mylib", "matmul", (op,), frozenset({index[op]}), Role.LIBRARY) for op in nodes if isinstance(op, tcp.MatmulOp)
    ]


@pytest.fixture
def with_mylib(monkeypatch: pytest.MonkeyPatch) -> str:
    entry = dataclasses.replace(BACKENDS["cudnn"], name="mylib", candidates=_matmul_library, channels_last_convs=False)
    assert isinstance(entry, ChoosableBackend)
    monkeypatch.setitem(table.BACKENDS, "mylib", entry)
    return "mylib"


def test_a_backend_added_to_the_table_is_chosen_among_by_its_role(with_mylib: str) -> None:
    program, _, _ = block_program()
    nodes = graph_nodes(program.entry.body.block)
    names = ("cudnn", "triton", with_mylib)
    auto = enumerate_candidates(nodes, names, "auto")
    mine = [c for c in auto if c.backend == with_mylib]
    assert [c.kind for c in mine] == ["matmul"]
    root = min(mine[0].covers)
    # preferring libraries keeps generated kernels off its root; preferring the generator drops it
    libraries_first = enumerate_candidates(nodes, names, "cudnn-only")
    assert any(c.backend == with_mylib for c in libraries_first)
    assert not any(c.role is Role.GENERATOR and root in c.covers for c in libraries_first)
    assert not any(c.backend == with_mylib for c in enumerate_candidates(nodes, names, "triton-only"))
    # a spec can speak about its sites, as about cuDNN's
    assert any(c.backend == with_mylib for cands in library_roots(nodes).values() for c in cands)


def test_policies_filter_by_role() -> None:
    lib = Candidate("lib", "conv", (), frozenset({0}), Role.LIBRARY)
    lib_epilogue = Candidate("lib", "conv_relu", (), frozenset({0, 1}), Role.LIBRARY)
    gen_root = Candidate("gen", "conv2d", (), frozenset({0}), Role.GENERATOR)
    gen_epilogue = Candidate("gen", "relu", (), frozenset({1}), Role.GENERATOR)
    fixed = Candidate("lib", "attention", (), frozenset({2}), fixed=True)
    view = Candidate("view", "reshape", (), frozenset({3}))
    every = [lib, lib_epilogue, gen_root, gen_epilogue, fixed, view]
    assert policy_candidates(every, "auto") == every
    assert policy_candidates(every, "cudnn-only") == [lib, lib_epilogue, gen_epilogue, fixed, view]
    assert policy_candidates(every, "triton-only") == [gen_root, gen_epilogue, fixed, view]


MINE = SpecChoice(
    library="cudnn",
    keys=("kernel",),
    problem=lambda c: None if isinstance(c.get("kernel"), str) else ("kernel", "decision.kernel names one of mylib's kernels"),
    describe=lambda c: c["kernel"],
    of_kernel=lambda op, kernel: {"kernel": kernel.name} if kernel is not None else {},
    holds_for=lambda c, version: None,
    applied=lambda c: c["kernel"],
)
RECORD = """\
schema = 1

[[record]]
match = { kind = "matmul", dtype = ["f16"] }
decision = { backend = "mylib", kernel = %s }
"""


def test_a_spec_speaks_for_any_backend_through_its_spec_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    """A backend with a ``SpecChoice`` is chosen, checked, described, applied and
    written back by specs without a line of spec code naming it."""
    from dnnc.specs import format as spec_format
    from dnnc.specs import parse_library
    from dnnc.specs.format import Decision, SpecError
    from dnnc.specs.write import library_toml

    monkeypatch.setitem(spec_format.CHOICES, "mylib", MINE)
    (record,) = parse_library(RECORD % '"mm_128x64"', "mine.toml").records
    assert record.decision == Decision("mylib", {"kernel": "mm_128x64"})
    assert record.decision.describe() == "mylib mm_128x64" and record.decision.applied == "mm_128x64"
    (again,) = parse_library(library_toml([record]), "again.toml").records
    assert again.decision == record.decision
    with pytest.raises(SpecError, match=r"bad.toml:5: record: decision.kernel names one of mylib's kernels"):
        parse_library(RECORD % "7", "bad.toml")
    with pytest.raises(SpecError, match=r"decision.config does not apply to backend 'mylib'"):
        parse_library((RECORD % '"k"').replace("kernel =", "config = { BLOCK = 64 }, kernel ="), "bad.toml")
