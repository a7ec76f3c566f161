"""A captured graph's memset nodes become fill kernels that write the same bytes, in
the same place of the graph's order, for every element size and for a pitched memset;
a graph without memsets, and one from a setting that is off, replay as captured."""

from __future__ import annotations

import pytest
import torch

from dnnc import graph_memsets, knobs
from dnnc.kernels.driver import bindings, checked

pytestmark = pytest.mark.gpu


def _stream() -> int:
    return torch.cuda.current_stream().cuda_stream


def _node_types(graph: torch.cuda.CUDAGraph) -> list[str]:
    driver = bindings()
    raw = driver.CUgraph(int(graph.raw_cuda_graph()))
    count = checked(driver.cuGraphGetNodes(raw), "count")[-1]
    nodes = checked(driver.cuGraphGetNodes(raw, count), "nodes")[0]
    return [checked(driver.cuGraphNodeGetType(n), "type").name for n in nodes]


def _captured(work) -> torch.cuda.CUDAGraph:
    graph = graph_memsets.kept_graph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        work()  # lazy initialisation outside the capture
    torch.cuda.current_stream().wait_stream(side)
    with torch.cuda.graph(graph):
        work()
    return graph


def test_memsets_of_every_size_become_fill_kernels_in_the_graphs_order() -> None:
    driver = bindings()
    words = torch.full((1000,), 5, dtype=torch.int32, device="cuda")
    halves = torch.full((3001,), 5, dtype=torch.int16, device="cuda")
    bytes_ = torch.full((70_000,), 5, dtype=torch.uint8, device="cuda")
    pitched = torch.full((6, 40), 5, dtype=torch.int32, device="cuda")  # 6 rows of 40, 25 written
    read = {}

    def work() -> None:
        checked(driver.cuMemsetD32Async(words.data_ptr(), 0x01020304, words.numel(), _stream()), "memset")
        read["words"] = words + 1  # reads what the memset wrote: after it in the graph
        checked(driver.cuMemsetD16Async(halves.data_ptr(), 0xBEEF, halves.numel(), _stream()), "memset")
        checked(driver.cuMemsetD8Async(bytes_.data_ptr(), 0xA5, bytes_.numel(), _stream()), "memset")
        checked(driver.cuMemsetD2D32Async(pitched.data_ptr(), 40 * 4, 0xFFFFFFFF, 25, 6, _stream()), "memset")
        read["pitched"] = pitched * 2

    graph = _captured(work)
    assert _node_types(graph).count("CU_GRAPH_NODE_TYPE_MEMSET") == 4
    assert graph_memsets.memsets_as_kernels(int(graph.raw_cuda_graph()), torch.cuda.current_device()) == 4
    types = _node_types(graph)
    assert "CU_GRAPH_NODE_TYPE_MEMSET" not in types
    graph.instantiate()
    for t in (words, halves, bytes_, pitched):
        t.fill_(7)
    graph.replay()
    torch.cuda.synchronize()
    assert (words == 0x01020304).all() and (read["words"] == 0x01020305).all()
    assert (halves == 0xBEEF - 0x10000).all()  # the 16-bit pattern, read as signed
    assert (bytes_ == 0xA5).all() and bytes_.numel() > graph_memsets.FILL_THREADS * 256  # several blocks
    assert (pitched[:, :25] == -1).all() and (pitched[:, 25:] == 7).all()
    assert (read["pitched"][:, :25] == -2).all() and (read["pitched"][:, 25:] == 14).all()


def test_instantiated_replaces_and_a_graph_without_memsets_is_unchanged() -> None:
    driver = bindings()
    x = torch.ones(4096, device="cuda")
    out = {}

    def with_memset() -> None:
        checked(driver.cuMemsetD32Async(x.data_ptr(), 0, x.numel(), _stream()), "memset")
        out["y"] = x + 3

    graph = _captured(with_memset)
    assert graph_memsets.instantiated(graph) == 1
    x.fill_(9)
    graph.replay()
    torch.cuda.synchronize()
    assert (x == 0).all() and (out["y"] == 3).all()

    plain = _captured(lambda: out.__setitem__("z", x * 2))
    assert graph_memsets.instantiated(plain) == 0
    plain.replay()
    torch.cuda.synchronize()
    assert (out["z"] == 0).all()


def test_off_the_graph_keeps_its_memsets() -> None:
    driver = bindings()
    x = torch.ones(64, dtype=torch.int32, device="cuda")
    with knobs.override(graph_fill_kernels=False):
        graph = _captured(lambda: checked(driver.cuMemsetD32Async(x.data_ptr(), 3, 64, _stream()), "memset"))
        assert graph_memsets.instantiated(graph) == 0
    graph.replay()
    torch.cuda.synchronize()
    assert (x == 3).all()


def test_a_compiled_programs_summary_counts_its_fill_kernels() -> None:
    import dnnc

    model = torch.nn.Sequential(torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU()).cuda().half().eval()
    x = torch.randn(2, 8, 16, 16, device="cuda", dtype=torch.float16)
    compiled = dnnc.compile(model, [x], device="cuda")
    torch.testing.assert_close(compiled(x), model(x), rtol=2e-2, atol=2e-2)
    count = compiled.summary()["graph_fill_kernels"]
    assert isinstance(count, int) and count >= 0
