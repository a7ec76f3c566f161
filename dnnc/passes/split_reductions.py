"""split-reductions: a reduction of a large tensor to a few values becomes two reductions.

A generated GPU kernel reduces each output row in one program. A reduction to a single
value is one row, so one of the GPU's 132 multiprocessors reads the whole tensor alone:
T5's float16 overflow check (``isinf(x).any()`` over a layer's 8x128x512 activations,
1 MB) took 28 us on an H200, twelve times a call, where reading 1 MB takes under a
microsecond. Here the reduced elements are cut into equal chunks: the first reduction
gives one value per chunk, hundreds of rows that programs reduce side by side, and
a second reduces those few values.

It applies to sums, maxima ("any" on i1) and means whose reduced axes are the trailing
ones, with at most ``FEW_ROWS`` rows left and at least ``LONG_ROW`` elements in each,
where the row length has a divisor near ``CHUNK``. Float sums and means narrower than
float32 are reduced in float32 across the two steps (the chunk values are kept in
float32, not rounded to the input's type) and rounded once at the end; a mean is the
mean of the chunks' means, exact for chunks of equal length.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from xdsl.dialects.builtin import f32
from xdsl.ir import Attribute
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from dnnc.ir import tcp
from dnnc.ir.attrs import bool_attr, i64_array, ints
from dnnc.ir.builder import TcpBuilder
from dnnc.ir.rewriting import PatternPass
from dnnc.ir.types import element_of, is_float, shape_of, torch_dtype

FEW_ROWS = 32
"""At most this many output values: fewer rows than a GPU has multiprocessors by far."""
LONG_ROW = 65536
"""At least this many elements reduced into each value (128 KB of float16)."""
CHUNK = 2048
"""The chunk length aimed at: a divisor of the row length from this down to a quarter of it."""


def chunk_length(row: int) -> int | None:
    """The largest divisor of ``row`` in ``[CHUNK // 4, CHUNK]``, or None."""
    for length in range(CHUNK, CHUNK // 4 - 1, -1):
        if row % length == 0:
            return length
    return None


def _widened(element: Attribute) -> bool:
    """Float types whose sums are kept in float32 between the two steps."""
    return is_float(element) and torch_dtype(element).itemsize < 4


class SplitReduction(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tcp.ReduceOp, rewriter: PatternRewriter) -> None:
        if not isinstance(op, tcp.REDUCTION_OPS):
            return
        shape = shape_of(op.input)
        axes = tuple(ints(op.axes))
        if axes != tuple(range(len(shape) - len(axes), len(shape))):
            return  # reduced axes not trailing: a reshape cannot gather them into one
        kept = shape[: len(shape) - len(axes)]
        row = prod(shape[len(kept) :])
        if prod(kept) > FEW_ROWS or row < LONG_ROW:
            return
        length = chunk_length(row)
        if length is None:
            return
        b = TcpBuilder.before(op)
        element = element_of(op.input)
        x = op.input
        if not isinstance(op, tcp.ReduceMaxOp) and _widened(element):
            x = b.cast(x, f32)
        chunks = b.reshape(x, (*kept, row // length, length))
        last = len(kept) + 1
        props = {"keepdim": bool_attr(False)}
        partial = b.build(type(op), [chunks], axes=i64_array([last]), **props)
        whole = b.build(type(op), [partial], axes=i64_array([last - 1]), **props)
        result = b.reshape(b.cast(whole, element), shape_of(op.result))  # keepdim's 1s back
        rewriter.replace(op, [], [result])


@dataclass(frozen=True)
class SplitReductions(PatternPass):
    name = "split-reductions"
    patterns = (SplitReduction(),)
