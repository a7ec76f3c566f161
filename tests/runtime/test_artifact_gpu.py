"""Artifacts and the arena / CUDA-graph runtime on a GPU: ResNet-50 fp16 compiled,
saved, loaded in a fresh process (no plan timed, no fallback) and run matches
eager; the arena and the CUDA graph give the executor's results; outputs returned
by a graph replay are not overwritten by the next call; a binding replays on the
caller's tensors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import dnnc
from dnnc.models import FACTORIES
from dnnc.runtime.arena import ArenaRunner
from dnnc.runtime.cuda_graph import DIRECT_GRAPHS, CudaGraphRunner
from tests.runtime.test_gpu_models import assert_as_close_as_eager

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]
BATCH = 2
SAME = {"rtol": 2e-3, "atol": 2e-3}
"""Two runs of the same kernels; loose only in case an engine reduces in a varying order."""


@pytest.fixture(scope="module")
def resnet(tmp_path_factory: pytest.TempPathFactory) -> tuple[torch.nn.Module, dnnc.CompiledModule, Path]:
    model, (x,) = FACTORIES["resnet50"](batch=BATCH)
    model = model.eval().to("cuda", torch.float16)
    compiled = dnnc.compile(model, (x.to("cuda", torch.float16),), device="cuda")
    path = compiled.save(tmp_path_factory.mktemp("artifact") / "resnet50.dnnc")
    return model, compiled, path


def _fresh_input(rng: torch.Generator) -> torch.Tensor:
    return torch.randn(BATCH, 3, 224, 224, generator=rng).to(torch.float16)


LOAD_AND_RUN = """
import json, sys, warnings, numpy as np, torch, dnnc
with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    m = dnnc.load(sys.argv[1])
    y = m(torch.from_numpy(np.load(sys.argv[2])).cuda())
np.save(sys.argv[3], y.float().cpu().numpy())
steps = m._executor.steps
print(json.dumps({
    "fallbacks": m.summary()["fallbacks"],
    "cudnn_rebuilt": [s.kernel.rebuilt for s in steps if s.backend == "cudnn"],
    "graph_captured": m._runner.captured,
    "peak": m.memory_peak_bytes,
    "warnings": [str(w.message) for w in said],
}))
"""


def test_resnet50_fp16_loads_in_a_fresh_process_and_matches_eager(resnet, tmp_path: Path, rng: torch.Generator) -> None:
    model, compiled, path = resnet
    x = _fresh_input(rng)
    np.save(tmp_path / "x.npy", x.numpy())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    args = [sys.executable, "-c", LOAD_AND_RUN, str(path), str(tmp_path / "x.npy"), str(tmp_path / "y.npy")]
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    assert not facts["fallbacks"], facts
    rebuilt = facts["cudnn_rebuilt"]
    assert rebuilt and all(rebuilt), (
        f"cuDNN graphs {[i for i, r in enumerate(rebuilt) if not r]} not rebuilt on load: {facts['warnings']}"
    )
    assert facts["graph_captured"] == 1 and facts["peak"] > 0
    got = torch.from_numpy(np.load(tmp_path / "y.npy"))
    with torch.no_grad():
        eager = model(x.cuda()).float().cpu()
        expected = model.to(torch.float64).cpu()(x.double())
    model.to("cuda", torch.float16)
    assert_as_close_as_eager(got, eager, expected, torch.float16)
    torch.testing.assert_close(got, compiled(x.cuda()).float().cpu(), **SAME)


def test_plans_are_records_and_the_ir_stays_the_program(resnet) -> None:
    """Each cuDNN graph's plan is in ``cudnn.json`` by its position; building wrote none into the IR."""
    import zipfile

    _, compiled, path = resnet
    graphs = [s for s in compiled._executor.steps if s.backend == "cudnn"]
    with zipfile.ZipFile(path) as z:
        target = json.loads(z.read("manifest.json"))["target"]
        records = json.loads(z.read(f"kernels/{target}/cudnn.json"))
        program = z.read("program.mlir").decode()
    assert sorted(r["ordinal"] for r in records) == sorted(compiled._executor.ordinals[s.op] for s in graphs)
    assert all(r["plan"]["engine"] >= 0 for r in records)
    assert "plan = " not in program and "plan=" not in program


def test_graph_replay_equals_uncaptured_and_the_executor(resnet, rng: torch.Generator) -> None:
    _, compiled, path = resnet
    graphed, plain = dnnc.load(path, cuda_graph=True), dnnc.load(path, cuda_graph=False)
    assert isinstance(graphed._runner, CudaGraphRunner) and isinstance(plain._runner, ArenaRunner)
    x = _fresh_input(rng).cuda()
    reference = compiled._executor.run([x])[0]  # the executor as before: torch allocations, no graph
    from_arena = plain(x)
    replayed = graphed(x)
    assert graphed._runner.disabled is None and graphed._runner.captured == 1
    torch.testing.assert_close(from_arena, reference, **SAME)
    torch.testing.assert_close(replayed, reference, **SAME)
    torch.testing.assert_close(graphed(x), replayed, **SAME)  # a replay, not a new capture
    assert graphed._runner.captured == 1


def test_repeated_inputs_replay_on_their_own_memory(resnet, rng: torch.Generator) -> None:
    """The same tensors passed again get a graph reading them in place; it reads what
    lives there at replay time, and other tensors still take the copying graph."""
    _, compiled, path = resnet
    module = dnnc.load(path)
    runner = module._runner
    x = _fresh_input(rng).cuda()
    first = module(x)
    assert (runner.captured, runner.captured_direct) == (1, 0)
    torch.testing.assert_close(module(x), first, **SAME)
    assert runner.captured_direct == 1, "the second call with the same tensor captures on its memory"
    x.copy_(_fresh_input(rng).cuda())  # new values at the same address
    expected = compiled._executor.run([x])[0]
    torch.testing.assert_close(module(x), expected, **SAME)
    assert runner.captured_direct == 1
    others = [_fresh_input(rng).cuda() for _ in range(DIRECT_GRAPHS + 1)]
    for other in others:  # each twice: one copying replay, then a graph on its memory
        module(other)
        torch.testing.assert_close(module(other), compiled._executor.run([other])[0], **SAME)
    assert runner.captured_direct == DIRECT_GRAPHS and runner.captured == 1, "the least recently used are dropped"


def test_replayed_outputs_are_not_overwritten_by_the_next_call(resnet, rng: torch.Generator) -> None:
    _, _, path = resnet
    module = dnnc.load(path)
    first = module(_fresh_input(rng).cuda())
    kept = first.clone()
    second = module(_fresh_input(rng).cuda())
    assert torch.equal(first, kept)
    assert not torch.equal(first, second)


@pytest.mark.parametrize("cuda_graph", [True, False])
def test_outputs_are_ordinary_tensors_on_every_path(resnet, rng: torch.Generator, cuda_graph: bool) -> None:
    """From the graph on static copies, the graph on the caller's own tensors (the same
    input twice) and the uncaptured arena: none is an inference tensor, so ``out += 1``
    works as on eager's outputs."""
    _, _, path = resnet
    module = dnnc.load(path, cuda_graph=cuda_graph)
    x = _fresh_input(rng).cuda()
    for _ in range(3):
        out = module(x)
        assert not out.is_inference()
        out += 1


@pytest.mark.parametrize("cuda_graph", [True, False])
def test_a_binding_replays_on_the_callers_tensors_into_its_own_outputs(resnet, rng: torch.Generator, cuda_graph: bool) -> None:
    """``bind`` gives outputs holding the result for the bound input; each ``replay``
    reads what the input holds then and rewrites the same outputs; a call of the module
    in between leaves them alone. Uncaptured (``cuda_graph=False``), the same holds."""
    _, compiled, path = resnet
    module = dnnc.load(path, cuda_graph=cuda_graph)
    x = _fresh_input(rng).cuda()
    binding = module.bind(x)
    if cuda_graph:
        assert module._runner.disabled is None
    out = binding.outputs
    torch.testing.assert_close(out, compiled._executor.run([x])[0], **SAME)
    x.copy_(_fresh_input(rng).cuda())
    expected = compiled._executor.run([x])[0]
    binding.replay()
    torch.cuda.synchronize()
    assert binding.outputs is out
    torch.testing.assert_close(out, expected, **SAME)
    kept = out.clone()
    module(_fresh_input(rng).cuda())  # another call: its own graph, the binding's outputs untouched
    torch.cuda.synchronize()
    assert torch.equal(out, kept)
    with pytest.raises(dnnc.DnncError, match="expected dtype torch.float16"):
        module.bind(torch.randn(BATCH, 3, 224, 224, device="cuda"))


def test_a_binding_outlives_the_callers_reference_to_its_program(resnet, rng: torch.Generator) -> None:
    """A binding made by ``load(...).bind(...)`` in one expression: the captured graph
    reads the program's weights and arena by address, so they stay allocated while the
    binding lives. Memory of the arena's size is taken and filled with NaN after the
    program's last other reference is dropped; the replay still computes the model."""
    import gc

    _, compiled, path = resnet
    x = _fresh_input(rng).cuda()
    module = dnnc.load(path)
    arena = module._runner.arena.arena.numel()
    binding = module.bind(x)
    del module
    gc.collect()
    taken = [torch.full((arena,), 255, dtype=torch.uint8, device="cuda") for _ in range(4)]
    x.copy_(_fresh_input(rng).cuda())
    expected = compiled._executor.run([x])[0]
    binding.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(binding.outputs, expected, **SAME)
    del taken


def test_bad_inputs_stop_before_any_launch(resnet) -> None:
    _, _, path = resnet
    module = dnnc.load(path)
    with pytest.raises(dnnc.DnncError, match="expected a tensor on cuda"):
        module(torch.randn(BATCH, 3, 224, 224).half())
    with pytest.raises(dnnc.DnncError, match="expected dtype torch.float16"):
        module(torch.randn(BATCH, 3, 224, 224, device="cuda"))
    assert module._runner.captured == 0


def test_a_kernel_record_carrying_code_is_refused_without_running_it(resnet, tmp_path: Path) -> None:
    """Python prepended to a recorded Triton kernel (the member's SHA-256 recomputed,
    as an attacker would) is never executed: load regenerates every kernel from the
    IR and refuses an artifact whose record differs."""
    import hashlib
    import shutil
    import zipfile

    _, _, path = resnet
    crafted = tmp_path / "crafted.dnnc"
    shutil.copy(path, crafted)
    mark = tmp_path / "payload-ran"
    with zipfile.ZipFile(crafted) as z:
        contents = {n: z.read(n) for n in z.namelist()}
    member = next(n for n in contents if n.endswith("/triton.json"))
    records = json.loads(contents[member])
    records[0]["text"] = f"import pathlib\npathlib.Path({str(mark)!r}).write_text('ran')\n" + records[0]["text"]
    contents[member] = json.dumps(records).encode()
    manifest = json.loads(contents["manifest.json"])
    manifest["members"][member] = hashlib.sha256(contents[member]).hexdigest()
    contents["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(crafted, "w") as z:
        for name, data in contents.items():
            z.writestr(name, data)
    with pytest.raises(dnnc.DnncError, match="differs from the one dnnc generates"):
        dnnc.load(crafted, device="cuda")
    assert not mark.exists()
