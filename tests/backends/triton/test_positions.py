"""Offsets the kernels compute: position variables split from one linear index and met
again in row-major order are that index again, so Triton sees the offset contiguous."""

from __future__ import annotations

from dnnc.backends.triton import TritonFuse
from dnnc.backends.triton.configs import candidates
from dnnc.backends.triton.emitter import Index, KernelEmitter
from dnnc.backends.triton.kernels import generate
from dnnc.backends.triton.skeleton import GroupInfo
from dnnc.ir import tcp
from dnnc.pipeline import run_passes
from tests.backends.triton.cases import CASES


def test_split_positions_meet_again_as_their_index() -> None:
    em = KernelEmitter({})
    rows = em.dims(Index((32, 960), flat="rows"))
    cols = em.dims(Index((7, 7), flat="cols"))
    nchw = Index((32, 960, 7, 7), dims=(*rows, *cols))
    nhwc = Index((32, 7, 7, 960), dims=(rows[0], *cols, rows[1]))
    assert em.flat(nchw) == "((rows)) * 49 + (cols)"
    assert em.flat(nhwc) == f"({rows[0]}) * 47040 + ((cols)) * 960 + {rows[1]}"
    swapped = Index((32, 7, 7, 960), dims=(rows[0], cols[1], cols[0], rows[1]))  # not row-major: kept apart
    assert "cols" not in em.flat(swapped)


def test_a_channels_last_pool_stores_its_nchw_input_contiguously() -> None:
    (case,) = [c for c in CASES if c.name == "reduce_channels_last_mean_with_its_input"]
    program = case.program("f16")
    run_passes(program, [TritonFuse()])
    (group,) = [op for op in program.entry.body.walk() if isinstance(op, tcp.IsolatedGroupOp)]
    source = generate(group, candidates(GroupInfo.of(group))[0]).text
    assert "tl.store(out0 + tl.broadcast_to(((rows)) * 25 + (cols)," in source, source


def test_a_pointwise_convolution_reads_and_stores_contiguous_rows() -> None:
    """NCHW: the pixel index ``p_i``; NHWC (the transposes of conv_stores_permuted): the row
    ``rm`` times the channels. No bounds test on a 1x1 convolution without padding."""
    sources = {}
    for name in ("pointwise_conv_residual", "conv_stores_permuted"):
        (case,) = [c for c in CASES if c.name == name]
        program = case.program("f16")
        run_passes(program, [TritonFuse()])
        group = next(op for op in program.entry.body.walk() if isinstance(op, tcp.IsolatedGroupOp))
        sources[name] = generate(group, candidates(GroupInfo.of(group))[0]).text
    nchw, nhwc = sources["pointwise_conv_residual"], sources["conv_stores_permuted"]
    assert "tl.load(in0 + tl.broadcast_to((n_i) * 210 + (ci0) * 35 + (p_i)," in nchw, nchw
    assert "tl.store(out0 + offs0" in nchw and "offs0 = tl.broadcast_to((n_i) * 350 + (o_i) * 35 + (p_i)," in nchw, nchw
    assert "inb" not in nchw
    assert "((rm)) * 5 + ci0" in nhwc, nhwc


def test_heads_sliced_from_merged_projections_are_read_contiguously() -> None:
    """The key's heads, split from a slice of the merged product's columns: each position
    is the row times the merged width plus the slice's start, the head and the lane; no
    quotient or remainder of a linear index that would hide the lanes' contiguity."""
    (case,) = [c for c in CASES if c.name == "attention_heads_sliced_from_merged_projections"]
    program = case.program("f16")
    run_passes(program, [TritonFuse()])
    (group,) = [op for op in program.entry.body.walk() if isinstance(op, tcp.IsolatedGroupOp)]
    source = generate(group, candidates(GroupInfo.of(group))[0]).text
    loads = [line for line in source.splitlines() if "tl.load(" in line]
    assert len(loads) == 3 and not any("//" in line or "%" in line for line in loads), source
    assert any("(rn) * 144 + (hk) * 16 + rdk + 48" in line for line in loads), source
