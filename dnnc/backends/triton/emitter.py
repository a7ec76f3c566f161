"""Triton expressions for tcp values at symbolic positions.

A kernel asks ``KernelEmitter.value(v, index, mask)``: "the value of ``v`` at these
positions, for the lanes where ``mask`` holds" and gets the name of a Triton
variable. Index ops (``ops.INDEX_OPS``) turn into arithmetic on the positions
(a transpose permutes them, a broadcast zeroes some, a gather loads them) and a
block argument becomes one ``tl.load``; so a chain of them reads each input once
and never stores an intermediate. Results are memoized per (value, positions,
mask), so a value used twice at the same positions is computed once.

Positions are an ``Index``: either a row-major linear offset into the value's
shape (``flat``, cheap through reshapes, and what makes contiguous loads visible
to Triton) or one expression per dimension (``dims``); each converts to the other
on demand.

Numerics: floats are held in float32 whatever their element type and rounded
only where the program casts and where results are stored, as the reference
backend does; integers and i1 keep their own types.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from dnnc.errors import DnncError
from dnnc.ir import tcp
from dnnc.ir.attrs import ints, scalar
from dnnc.ir.types import describe, element_name, element_of, is_float, shape_of

TL_TYPES = {
    "f32": "tl.float32",
    "f16": "tl.float16",
    "bf16": "tl.bfloat16",
    "i64": "tl.int64",
    "i32": "tl.int32",
    "i1": "tl.int1",
}
POINTER_TYPES = {"f32": "*fp32", "f16": "*fp16", "bf16": "*bf16", "i64": "*i64", "i32": "*i32", "i1": "*i1"}


class CodegenError(DnncError):
    """A group the Triton backend cannot generate a kernel for."""


def compute_type(v: SSAValue) -> str:
    """The Triton type a value is held in inside a kernel."""
    name = element_name(element_of(v))
    return "tl.float32" if is_float(element_of(v)) else TL_TYPES[name]


def storage_type(v: SSAValue) -> str:
    return TL_TYPES[element_name(element_of(v))]


def literal(value: float | int | bool) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float) and not math.isfinite(value):
        return f'float("{value}")'
    return repr(value)


def strides(shape: Sequence[int]) -> list[int]:
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= n
    return out[::-1]


def is_constant(expr: str) -> bool:
    return re.search(r"[A-Za-z_]", expr) is None


@dataclass(frozen=True)
class Index:
    """Positions into a tensor of ``shape``: a linear offset or one expression per dim."""

    shape: tuple[int, ...]
    flat: str | None = None
    dims: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Columns:
    """The axis of an epilogue's tile that a bias runs along: the position variables
    that name it alone, the mask of the whole tile, and the mask of that axis alone
    (``KernelEmitter.columns``). A product's columns (its output channels); the
    depthwise kernel's rows (its channels)."""

    names: frozenset[str]
    tile_mask: str
    row_mask: str


def _describe_op(op: Operation) -> str:
    types = ", ".join(describe(o.type) for o in op.operands)
    return f"{op.name} on ({types})"


class KernelEmitter:
    """Accumulates the lines of one kernel body."""

    def __init__(self, pointers: dict[SSAValue, str], interpret: bool = False):
        self.pointers = pointers
        self.interpret = interpret
        self.lines: list[str] = []
        self.depth = 1
        self.tile = "(BLOCK,)"
        self.memo: dict[tuple, str] = {}
        self.anchors: dict[SSAValue, tuple[Index, str]] = {}
        self._names: dict[str, int] = {}
        self.tile_reads: Callable[[SSAValue, Index], str | None] | None = None
        """Reads a block argument at given positions as a whole tile (through TMA) where it
        can, giving the variable, else None (it is loaded element by element)."""
        self.raw: dict[str, tuple[str, str, str]] = {}
        """A float load's float32 variable -> the variable loaded in its own type, that
        type's element name and the mask it was loaded under (``other=0``): a product's
        operand tile that is a plain load feeds ``tl.dot`` as loaded."""
        self.columns: Columns | None = None
        """Set in a product's (and the depthwise kernel's) epilogue. A value read there at
        those positions alone under the tile's mask (a bias) is loaded once along the tile's
        other axis (a product's ``(1, BLOCK_N)`` row) and broadcast where it meets the tile:
        loaded as the whole tile, each element read again for every row, it took 30% of the
        kernel time of ResNet-50's 64 -> 256 block ends at batch 128 (H200,
        ``bench/summed_probe.py``)."""
        self.loads: dict[str, tuple[str, str]] = {}
        """A load's variable -> the pointers it read and the mask it read them under
        (``either_load`` merges two loads into one)."""
        self.splits: dict[tuple[str, ...], tuple[str, tuple[int, ...]]] = {}
        """Position variables that ``dims`` split from one linear expression (their names,
        size-1 dims left out) -> that expression and their sizes: ``flat`` puts the
        expression back where they meet again in row-major order."""

    # Text ---------------------------------------------------------------------------

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def drop_if_unused(self, name: str) -> None:
        """Remove the line that assigns ``name`` when no other line reads it (a value
        emitted in case it was needed), and forget it: a later read of the same value
        emits it again."""
        assign = re.compile(rf"^\s*{re.escape(name)} = ")
        read = re.compile(rf"\b{re.escape(name)}\b")
        if sum(1 for line in self.lines if read.search(line)) == 1:
            self.lines = [line for line in self.lines if not assign.match(line)]
            self.memo = {key: var for key, var in self.memo.items() if var != name}

    def either_load(self, cond: str, first: str, second: str) -> str:
        """One load in place of the loads ``first`` and ``second`` (names ``load`` gave,
        read by nothing else yet): it reads ``first``'s pointers under its mask where the
        scalar ``cond`` holds, else ``second``'s. A loop whose K steps read one of two
        operands then keeps a plain load, which Triton pipelines into shared memory."""
        (p1, m1), (p2, m2) = self.loads[first], self.loads[second]
        name = self.let(f"tl.load(tl.where({cond}, {p1}, {p2}), mask=tl.where({cond}, {m1}, {m2}), other=0)", "x")
        self.drop_if_unused(first)
        self.drop_if_unused(second)
        return name

    def comment(self, text: str) -> None:
        self.line(f"# {text}")

    def fresh(self, hint: str) -> str:
        hint = re.sub(r"\W", "_", hint) or "t"
        n = self._names.get(hint, 0)
        self._names[hint] = n + 1
        return f"{hint}{n}"

    def let(self, expr: str, hint: str = "t") -> str:
        name = self.fresh(hint)
        self.line(f"{name} = {expr}")
        return name

    @contextlib.contextmanager
    def block(self, header: str) -> Iterator[None]:
        """An indented block (a loop); values computed inside are not visible after it."""
        self.line(header)
        self.depth += 1
        saved, splits = dict(self.memo), dict(self.splits)
        try:
            yield
        finally:
            self.depth -= 1
            self.memo, self.splits = saved, splits

    @contextlib.contextmanager
    def tiled(self, tile: str) -> Iterator[None]:
        saved, self.tile = self.tile, tile
        try:
            yield
        finally:
            self.tile = saved

    # Positions ----------------------------------------------------------------------

    def dims(self, ix: Index) -> tuple[str, ...]:
        if ix.dims is not None:
            return ix.dims
        assert ix.flat is not None
        big = [i for i, n in enumerate(ix.shape) if n != 1]
        out: list[str] = []
        for i, (n, s) in enumerate(zip(ix.shape, strides(ix.shape))):
            if n == 1:
                out.append("0")
                continue
            expr = ix.flat if s == 1 else f"({ix.flat}) // {s}"
            if i != big[0]:
                expr = f"({expr}) % {n}"
            out.append(expr if expr == ix.flat else self.let(expr, "i"))
        self.split(ix.flat, out, ix.shape)
        return tuple(out)

    def split(self, expr: str, names: Sequence[str], sizes: Sequence[int]) -> None:
        """Record that position variables ``names`` (of ``sizes``, row-major) were split
        from the linear expression ``expr``; size-1 ones are left out (``flat`` skips them)."""
        kept = [(d, n) for d, n in zip(names, sizes) if n != 1]
        if len(kept) > 1:
            self.splits[tuple(d for d, _ in kept)] = (expr, tuple(n for _, n in kept))

    def flat(self, ix: Index) -> str:
        """The linear offset of ``ix``. Variables ``dims`` split from one expression, met
        in the same row-major run, are that expression again: Triton then sees an offset
        contiguous along it (a store of an NCHW value a channels-last row kernel computed
        is coalesced, not a scatter) and computes fewer quotients."""
        if ix.flat is not None:
            return ix.flat
        assert ix.dims is not None
        kept = [(d, n, s) for d, n, s in zip(ix.dims, ix.shape, strides(ix.shape)) if n != 1 and d != "0"]
        terms, i = [], 0
        while i < len(kept):
            d, _, s = kept[i]
            run = self._split_at(kept, i)
            if run:
                expr, width = run
                d, s = f"({expr})", kept[i + width - 1][2]
                i += width
            else:
                i += 1
            terms.append(d if s == 1 else f"({d}) * {s}")
        return " + ".join(terms) if terms else "0"

    def _split_at(self, kept: list[tuple[str, int, int]], i: int) -> tuple[str, int] | None:
        """The expression whose split variables are ``kept[i:]``'s first ones, with
        sizes and row-major strides as split, and how many they are; else None."""
        for names, (expr, sizes) in self.splits.items():
            run = kept[i : i + len(names)]
            if tuple(d for d, _, _ in run) != names or tuple(n for _, n, _ in run) != sizes:
                continue
            if all(run[j][2] == run[j + 1][1] * run[j + 1][2] for j in range(len(run) - 1)):
                return expr, len(names)
        return None

    def _refined_dims(self, source: Sequence[int], ix: Index) -> list[str] | None:
        """The positions in ``source`` of a reshape's result at ``ix``, axis by axis, where
        the result only splits ``source``'s axes (heads split from a row: ``[S, H*D] ->
        [S, H, D]``) and ``ix`` has positions of its own (a transpose's, not ones split
        from one offset, which ``flat`` would meet again): each source axis is a linear
        combination of the positions it was split into. Else None, and the reshape goes
        through the linear offset. A slice of the source (one of the columns of merged
        query/key/value products) then offsets the combination, where through the linear
        offset it would divide and take the remainder again, and Triton would no longer
        see the head's elements contiguous (whisper's attention: 35 -> 44-52 us a layer)."""
        if ix.dims is None or any(d in names for names in self.splits for d in ix.dims):
            return None
        split = [(n, d) for n, d in zip(ix.shape, ix.dims) if n != 1]
        out, j = [], 0
        for n in source:
            if n == 1:
                out.append("0")
                continue
            parts, size = [], 1
            while size < n and j < len(split):
                parts.append(split[j])
                size *= split[j][0]
                j += 1
            if size != n:
                return None
            terms, stride = [], 1
            for width, d in reversed(parts):
                if d != "0":
                    terms.append(d if stride == 1 else f"({d}) * {stride}")
                stride *= width
            out.append(" + ".join(reversed(terms)) if terms else "0")
        return out if j == len(split) else None

    def with_dims(self, shape: Sequence[int], dims: Sequence[str]) -> Index:
        return Index(tuple(shape), dims=tuple(dims))

    def before_transpose(self, op: tcp.TransposeOp, ix: Index) -> Index:
        """The positions in a transpose's input that its result's positions ``ix`` read."""
        d = self.dims(ix)
        perm = ints(op.permutation)
        src = [""] * len(perm)
        for i, p in enumerate(perm):
            src[p] = d[i]
        return self.with_dims(shape_of(op.input), src)

    # Values -------------------------------------------------------------------------

    def load(self, v: SSAValue, ix: Index, mask: str) -> str:
        off = self.flat(ix)
        given = mask
        if is_constant(off):
            off = f"tl.full({self.tile}, {off}, tl.int32)"
        elif (
            self.columns is not None
            and mask == self.columns.tile_mask
            and set(re.findall(r"[A-Za-z_]\w*", off)) <= self.columns.names
        ):
            mask = given = self.columns.row_mask  # once along the tile's other axis
        else:
            off = f"tl.broadcast_to({off}, {self.tile})"
        if self.interpret:
            # The interpreter stores a scalar int1 combined with a tile of them (a pad or a
            # pool window test on a tiled kernel's per-program axis) as int32, which its
            # tl.load rejects as a mask.
            mask = f"{mask} != 0"
        pointers = f"{self.pointers[v]} + {off}"
        expr = f"tl.load({pointers}, mask={mask}, other=0)"
        if not is_float(element_of(v)):
            return self.let(expr, "x")
        loaded = self.let(expr, "x")
        self.loads[loaded] = (pointers, mask)
        name = self.let(f"{loaded}.to(tl.float32)", "x")
        self.raw[name] = (loaded, element_name(element_of(v)), given)
        return name

    def value(self, v: SSAValue, ix: Index, mask: str) -> str:
        key = (v, ix, mask)
        if key in self.memo:
            return self.memo[key]
        if v in self.anchors:
            own, var = self.anchors[v]
            if own != ix:
                raise CodegenError(
                    f"the result of {_describe_op(v.owner)} is read at other positions than it is computed at "
                    "(only elementwise ops may follow an anchor inside a Triton group)"
                )
            return var
        if isinstance(v, BlockArgument) or v in self.pointers:
            tile = self.tile_reads(v, ix) if self.tile_reads is not None else None
            name = tile if tile is not None else self.load(v, ix, mask)
        else:
            op = v.owner
            assert isinstance(op, Operation)
            name = self._op_value(op, v, ix, mask)
        self.memo[key] = name
        return name

    def _op_value(self, op: Operation, v: SSAValue, ix: Index, mask: str) -> str:
        if isinstance(op, tcp.ReshapeOp):
            refined = self._refined_dims(shape_of(op.input), ix)
            if refined is not None:
                return self.value(op.input, self.with_dims(shape_of(op.input), refined), mask)
            return self.value(op.input, Index(shape_of(op.input), flat=self.flat(ix)), mask)
        if isinstance(op, tcp.BroadcastOp):
            d = self.dims(ix)
            src = shape_of(op.input)
            return self.value(op.input, self.with_dims(src, ["0" if n == 1 else e for n, e in zip(src, d)]), mask)
        if isinstance(op, tcp.TransposeOp):
            return self.value(op.input, self.before_transpose(op, ix), mask)
        if isinstance(op, tcp.SliceOp):
            d = self.dims(ix)
            src = []
            for e, b, s in zip(d, ints(op.starts), ints(op.strides)):
                term = e if s == 1 else f"({e}) * {s}"
                src.append(term if b == 0 else (str(b) if e == "0" else f"{term} + {b}"))
            return self.value(op.input, self.with_dims(shape_of(op.input), src), mask)
        if isinstance(op, tcp.PadOp):
            return self._pad(op, ix, mask)
        if isinstance(op, tcp.ConcatOp):
            return self._concat(op, ix, mask)
        if isinstance(op, tcp.GatherOp):
            return self._gather(op, ix, mask)
        if isinstance(op, tcp.TakeAlongOp):
            return self._take_along(op, ix, mask)
        if isinstance(op, tcp.ScatterOp):
            return self._scatter(op, ix, mask)
        if isinstance(op, tcp.ConstantOp):
            return self.let(f"tl.full({self.tile}, {literal(op.scalar)}, {compute_type(v)})", "c")
        if isinstance(op, tcp.IotaOp):
            (d,) = self.dims(ix)
            start, step = scalar(op.start), scalar(op.step)
            expr = f"tl.broadcast_to(({d}) * {step} + {start}, {self.tile})" if not is_constant(d) else None
            if expr is None:
                return self.let(f"tl.full({self.tile}, {start} + {d} * {step}, {compute_type(v)})", "c")
            return self.let(f"({expr}).to({compute_type(v)})", "iota")
        if isinstance(op, tcp.BatchNormOp):
            return self._batch_norm(op, ix, mask)
        if isinstance(op, tcp.CastOp):
            return self._cast(op, ix, mask)
        if isinstance(op, tcp.SelectOp):
            c, a, b = (self.value(o, ix, mask) for o in op.operands)
            return self.let(f"tl.where({c}, {a}, {b})", "sel")
        if isinstance(op, tcp.CompareOp):
            a, b = (self.value(o, ix, mask) for o in op.operands)
            sym = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[op.predicate.data]
            return self.let(f"{a} {sym} {b}", "cmp")
        if isinstance(op, tcp.BinaryOp):
            a, b = (self.value(o, ix, mask) for o in op.operands)
            return self._binary(op, a, b, is_float(element_of(v)))
        if isinstance(op, tcp.UnaryOp):
            return self._unary(op, self.value(op.input, ix, mask), is_float(element_of(v)))
        if isinstance(op, (tcp.MaxPool2dOp, tcp.AvgPool2dOp)):
            return self._pool(op, ix, mask)
        raise CodegenError(f"{_describe_op(op)} cannot be computed inside this Triton kernel (it needs a kernel of its own kind)")

    # Elementwise --------------------------------------------------------------------

    def _binary(self, op: Operation, a: str, b: str, floating: bool) -> str:
        simple = {tcp.AddOp: "+", tcp.SubOp: "-", tcp.MulOp: "*", tcp.DivOp: "/", tcp.LogicalAndOp: "&", tcp.LogicalOrOp: "|"}
        for kind, sym in simple.items():
            if isinstance(op, kind):
                return self.let(f"{a} {sym} {b}", "v")
        nan = ", propagate_nan=tl.PropagateNan.ALL" if floating else ""
        if isinstance(op, tcp.MaximumOp):
            return self.let(f"tl.maximum({a}, {b}{nan})", "v")
        if isinstance(op, tcp.MinimumOp):
            return self.let(f"tl.minimum({a}, {b}{nan})", "v")
        if isinstance(op, (tcp.FloorDivOp, tcp.RemainderOp, tcp.FmodOp)):
            return self._division(op, a, b, floating)
        bitwise = {
            tcp.BitwiseAndOp: "&",
            tcp.BitwiseOrOp: "|",
            tcp.BitwiseXorOp: "^",
            tcp.ShiftLeftOp: "<<",
            tcp.ShiftRightOp: ">>",
        }
        for kind, sym in bitwise.items():
            if isinstance(op, kind):
                return self.let(f"{a} {sym} {b}", "v")
        if isinstance(op, tcp.PowOp):
            # exp2(b * log2|a|) with pow's sign and zero rules (no libdevice: the interpreter lacks it).
            r = self.let(f"tl.exp2({b} * tl.log2(tl.abs({a})))", "pw")
            whole = self.let(f"tl.floor({b}) == {b}", "pw")
            odd = self.let(f"{whole} & (tl.floor({b} * 0.5) * 2.0 != {b})", "pw")
            r = self.let(f'tl.where({a} < 0, tl.where({whole}, tl.where({odd}, -{r}, {r}), float("nan")), {r})', "pw")
            return self.let(f"tl.where({b} == 0, 1.0, {r})", "v")
        raise CodegenError(f"{op.name} has no Triton expression")

    def _division(self, op: Operation, a: str, b: str, floating: bool) -> str:
        """Floor division, Python's remainder and C's fmod. Integer ``//`` truncates in
        compiled Triton but floors in its interpreter: the quotient is corrected from its
        remainder either way, so both give floor semantics."""
        if floating:
            r = self.let(f"{a} - {self._trunc(f'{a} / {b}')} * {b}", "fm")  # C's fmod
            if isinstance(op, tcp.FmodOp):
                return r
            if isinstance(op, tcp.RemainderOp):
                return self.let(f"tl.where(({r} != 0) & (({r} < 0) != ({b} < 0)), {r} + {b}, {r})", "v")
            return self.let(f"tl.floor({a} / {b})", "v")
        q0 = self.let(f"{a} // {b}", "q")
        r0 = self.let(f"{a} - {q0} * {b}", "r")
        off = self.let(f"({r0} != 0) & (({r0} < 0) != ({b} < 0))", "fix")
        if isinstance(op, tcp.FloorDivOp):
            return self.let(f"tl.where({off}, {q0} - 1, {q0})", "v")
        r = self.let(f"tl.where({off}, {r0} + {b}, {r0})", "v")  # the remainder with the sign of b
        if isinstance(op, tcp.RemainderOp):
            return r
        return self.let(f"tl.where(({r} != 0) & (({a} < 0) != ({b} < 0)), {r} - {b}, {r})", "v")

    def _trunc(self, x: str) -> str:
        return self.let(f"tl.where({x} < 0, tl.ceil({x}), tl.floor({x}))", "tr")

    def _round_even(self, x: str) -> str:
        """Round half to even: floor(x + 0.5), one less on an odd halfway result; floats
        from 2^23 up are integers already (and x + 0.5 would round there)."""
        r = self.let(f"tl.floor({x} + 0.5)", "rd")
        odd_tie = self.let(f"(({r} - {x}) == 0.5) & (({r} - 2.0 * tl.floor({r} * 0.5)) != 0.0)", "rd")
        r = self.let(f"tl.where({odd_tie}, {r} - 1.0, {r})", "rd")
        return self.let(f"tl.where(tl.abs({x}) >= 8388608.0, {x}, {r})", "v")

    def _math(self, op: Operation, x: str, floating: bool) -> str | None:
        """Rounding, trigonometry and the accurate log1p / expm1 (from exp and log, as
        libdevice is not there under the interpreter), or None for other ops."""
        if isinstance(op, tcp.SinOp):
            return self.let(f"tl.sin({x})", "v")
        if isinstance(op, tcp.CosOp):
            return self.let(f"tl.cos({x})", "v")
        if isinstance(op, tcp.TanOp):
            return self.let(f"tl.sin({x}) / tl.cos({x})", "v")
        if isinstance(op, tcp.FloorOp):
            return self.let(f"tl.floor({x})", "v")
        if isinstance(op, tcp.CeilOp):
            return self.let(f"tl.ceil({x})", "v")
        if isinstance(op, tcp.TruncOp):
            return self._trunc(x)
        if isinstance(op, tcp.RoundOp):
            return self._round_even(x)
        if isinstance(op, tcp.SignOp):
            one, minus = ("1.0", "-1.0") if floating else ("1", "-1")
            return self.let(f"tl.where({x} > 0, {one}, tl.where({x} < 0, {minus}, {x}))", "v")
        if isinstance(op, tcp.BitwiseNotOp):
            return self.let(f"~{x}", "v")
        if isinstance(op, tcp.Log1pOp):
            # log(u) * x / (u - 1) with u = 1 + x corrects the rounding of 1 + x (Goldberg)
            u = self.let(f"1.0 + {x}", "u")
            exact = self.let(f"tl.log({u}) * {x} / tl.where({u} == 1.0, 1.0, {u} - 1.0)", "u")
            return self.let(f'tl.where({u} == 1.0, {x}, tl.where({u} == float("inf"), {u}, {exact}))', "v")
        if isinstance(op, tcp.Expm1Op):
            # (u - 1) * x / log(u) with u = exp(x) corrects the rounding of exp(x) - 1 (Kahan)
            u = self.let(f"tl.exp({x})", "u")
            lg = self.let(f"tl.log({u})", "u")
            exact = self.let(f"({u} - 1.0) * {x} / tl.where({lg} == 0.0, 1.0, {lg})", "u")
            fixed = self.let(f"tl.where({u} - 1.0 == -1.0, -1.0, {exact})", "u")
            return self.let(f'tl.where({u} == 1.0, {x}, tl.where({u} == float("inf"), {u}, {fixed}))', "v")
        return None

    def _unary(self, op: Operation, x: str, floating: bool) -> str:
        if isinstance(op, tcp.ExpOp):
            return self.let(f"tl.exp({x})", "v")
        if isinstance(op, tcp.LogOp):
            return self.let(f"tl.log({x})", "v")
        if isinstance(op, tcp.TanhOp):
            return self._tanh(x)
        if isinstance(op, tcp.SigmoidOp):
            return self.let(f"tl.sigmoid({x})", "v")
        if isinstance(op, tcp.SiluOp):
            return self.let(f"{x} * tl.sigmoid({x})", "v")
        if isinstance(op, tcp.SqrtOp):
            return self.let(f"tl.sqrt({x})", "v")
        if isinstance(op, tcp.RsqrtOp):
            return self.let(f"tl.rsqrt({x})", "v")
        if isinstance(op, tcp.ErfOp):
            return self.let(f"tl.erf({x})", "v")
        if isinstance(op, tcp.NegOp):
            return self.let(f"-{x}", "v")
        if isinstance(op, tcp.AbsOp):
            return self.let(f"tl.abs({x})", "v")
        if isinstance(op, tcp.LogicalNotOp):
            return self.let(f"{x} == 0", "v")
        if isinstance(op, tcp.GeluOp):
            if op.approximate.data == "tanh":
                inner = self.let(f"0.7978845608028654 * ({x} + 0.044715 * {x} * {x} * {x})", "g")
                return self.let(f"0.5 * {x} * (1.0 + {self._tanh(inner)})", "v")
            return self._gelu(x)
        math_value = self._math(op, x, floating)
        if math_value is not None:
            return math_value
        if isinstance(op, tcp.ClampOp):
            # where() keeps NaN inputs NaN, as torch.clamp does; integer bounds truncate.
            convert = float if floating else int
            if op.min is not None:
                lo = literal(convert(op.min.value.data))
                x = self.let(f"tl.where({x} < {lo}, {lo}, {x})", "v")
            if op.max is not None:
                hi = literal(convert(op.max.value.data))
                x = self.let(f"tl.where({x} > {hi}, {hi}, {x})", "v")
            return x
        raise CodegenError(f"{op.name} has no Triton expression")

    def _gelu(self, x: str) -> str:
        """x * Phi(x) with Phi from erfc's rational-exponential form (Abramowitz and Stegun
        7.1.26, absolute error under 1.5e-7, below float16's resolution): an approximate
        reciprocal, one exponential and a degree-5 polynomial in place of libdevice's
        erff. The exact GELU runs on tens of millions of values in a ConvNeXt or ViT MLP,
        inside a product's epilogue (BENCHMARKS.md has what it saved). Negative x takes
        the erfc term directly, without the cancellation of 1 + erf(x)."""
        z = self.let(f"tl.abs({x}) * 0.7071067811865476", "g")
        t = self.let(f"tl.fdiv(1.0, 1.0 + 0.3275911 * {z}, ieee_rounding=False)", "g")
        poly = f"{t} * (-1.453152027 + {t} * 1.061405429)"
        poly = self.let(f"{t} * (0.254829592 + {t} * (-0.284496736 + {t} * (1.421413741 + {poly})))", "g")
        half_erfc = self.let(f"0.5 * {poly} * tl.exp(-{z} * {z})", "g")
        return self.let(f"{x} * tl.where({x} < 0, {half_erfc}, 1.0 - {half_erfc})", "v")

    def _tanh(self, x: str) -> str:
        """sign(x) * (1 - e) / (1 + e) with e = exp(-2|x|): no overflow, no libdevice."""
        e = self.let(f"tl.exp(-2.0 * tl.abs({x}))", "th")
        t = self.let(f"(1.0 - {e}) / (1.0 + {e})", "th")
        return self.let(f"tl.where({x} < 0, -{t}, {t})", "v")

    def _cast(self, op: tcp.CastOp, ix: Index, mask: str) -> str:
        x = self.value(op.input, ix, mask)
        src, dst = element_of(op.input), element_of(op.result)
        if src == dst:
            return x
        dst_name = element_name(dst)
        if dst_name == "i1":
            return self.let(f"{x} != 0", "cast")
        if is_float(dst):
            expr = f"{x}.to(tl.float32)"
            if dst_name != "f32":  # round once to the target type, then hold it in float32 again
                expr = f"{expr}.to({TL_TYPES[dst_name]}).to(tl.float32)"
            return self.let(expr, "cast")
        return self.let(f"{x}.to({TL_TYPES[dst_name]})", "cast")  # floats truncate toward zero

    # Data movement ------------------------------------------------------------------

    def _pad(self, op: tcp.PadOp, ix: Index, mask: str) -> str:
        d = self.dims(ix)
        src_shape = shape_of(op.input)
        fill = f"tl.full({self.tile}, {literal(scalar(op.value))}, {compute_type(op.result)})"
        src, conds = [], []
        for e, lo, hi, n in zip(d, ints(op.low), ints(op.high), src_shape):
            src.append(e if lo == 0 else f"{e} - {lo}")
            if is_constant(e):  # a position known now: inside, or the whole value is padding
                if not lo <= eval(e) < lo + n:
                    return self.let(fill, "pad")
                continue
            if lo:
                conds.append(f"({e} >= {lo})")
            if hi:
                conds.append(f"({e} < {lo + n})")
        if not conds:
            return self.value(op.input, self.with_dims(src_shape, src), mask)
        inside = self.let(" & ".join(conds), "inb")
        inner_mask = self.let(f"{mask} & {inside}", "m")
        x = self.value(op.input, self.with_dims(src_shape, src), inner_mask)
        return self.let(f"tl.where({inside}, {x}, {fill})", "pad")

    def _concat(self, op: tcp.ConcatOp, ix: Index, mask: str) -> str:
        axis = scalar(op.axis)
        d = list(self.dims(ix))
        result: str | None = None
        offset = 0
        for operand in op.inputs:
            n = shape_of(operand)[axis]
            src = list(d)
            src[axis] = d[axis] if offset == 0 else f"{d[axis]} - {offset}"
            inside = self.let(f"({d[axis]} >= {offset}) & ({d[axis]} < {offset + n})", "inb")
            part_mask = self.let(f"{mask} & {inside}", "m")
            x = self.value(operand, self.with_dims(shape_of(operand), src), part_mask)
            result = x if result is None else self.let(f"tl.where({inside}, {x}, {result})", "cat")
            offset += n
        assert result is not None
        return result

    def _flag_outside(self, mask: str, inside: str) -> None:
        """Set the kernel's ``index_flag`` where a live lane's index is outside its range
        (every such lane stores the same 1, so no atomic is needed)."""
        self.line(f"tl.store(index_flag + {inside}.to(tl.int32) * 0, 1, mask={mask} & ({inside} == 0))")

    def _gather(self, op: tcp.GatherOp, ix: Index, mask: str) -> str:
        """Indices are loaded like any value; an index outside ``[0, n)`` reads 0 and
        sets the kernel's ``index_flag`` (the reference raises; a kernel cannot)."""
        axis = scalar(op.axis)
        d = self.dims(ix)
        rank = len(shape_of(op.indices))
        where = self.value(op.indices, self.with_dims(shape_of(op.indices), d[axis : axis + rank]), mask)
        n = shape_of(op.input)[axis]
        inside = self.let(f"({where} >= 0) & ({where} < {n})", "inb")
        inner_mask = self.let(f"{mask} & {inside}", "m")
        self._flag_outside(mask, inside)
        src = [*d[:axis], where, *d[axis + rank :]]
        return self.value(op.input, self.with_dims(shape_of(op.input), src), inner_mask)

    def _take_along(self, op: tcp.TakeAlongOp, ix: Index, mask: str) -> str:
        """The index at this position names the element along ``axis``; one outside
        ``[0, n)`` reads 0 and sets the kernel's ``index_flag`` (the reference raises)."""
        axis = scalar(op.axis)
        d = self.dims(ix)
        where = self.value(op.indices, self.with_dims(shape_of(op.indices), d), mask)
        n = shape_of(op.input)[axis]
        inside = self.let(f"({where} >= 0) & ({where} < {n})", "inb")
        inner_mask = self.let(f"{mask} & {inside}", "m")
        self._flag_outside(mask, inside)
        src = [where if i == axis else e for i, e in enumerate(d)]
        return self.value(op.input, self.with_dims(shape_of(op.input), src), inner_mask)

    def _scatter(self, op: tcp.ScatterOp, ix: Index, mask: str) -> str:
        """An output element is the input's, replaced by (or plus) each update whose
        index lands on it: a loop over the indices along ``axis`` at this position's
        other coordinates, later ones winning, as the reference."""
        axis = scalar(op.axis)
        d = self.dims(ix)
        ishape = shape_of(op.indices)
        covered = [f"({e} < {n})" for i, (e, n) in enumerate(zip(d, ishape)) if i != axis and n < shape_of(op.input)[i]]
        reach = self.let(" & ".join([mask, *covered]), "m") if covered else mask
        acc = self.let(self.value(op.input, ix, mask), "sc")
        with self.block(f"for j in range({ishape[axis]}):"):
            q = self.with_dims(ishape, [("j" if i == axis else e) for i, e in enumerate(d)])
            where = self.value(op.indices, q, reach)
            hit = self.let(f"{reach} & ({where} == {d[axis]})", "hit")
            update = self.value(op.updates, q, reach)
            if op.mode.data == "add":
                self.line(f"{acc} = {acc} + tl.where({hit}, {update}, 0)")
            else:
                self.line(f"{acc} = tl.where({hit}, {update}, {acc})")
        return acc

    def _batch_norm(self, op: tcp.BatchNormOp, ix: Index, mask: str) -> str:
        x = self.value(op.input, ix, mask)
        channel = self.dims(ix)[1]
        c = shape_of(op.scale)
        scale, offset, mean, var = (self.value(o, self.with_dims(c, [channel]), mask) for o in op.operands[1:])
        eps = literal(scalar(op.epsilon))
        return self.let(f"({x} - {mean}) * tl.rsqrt({var} + {eps}) * {scale} + {offset}", "bn")

    # Pooling ------------------------------------------------------------------------

    def _pool(self, op: tcp.MaxPool2dOp | tcp.AvgPool2dOp, ix: Index, mask: str) -> str:
        """A loop over the window; each step evaluates the input (and whatever index
        ops produce it) at one window position."""
        n, c, ho, wo = self.dims(ix)
        _, _, h, w = shape_of(op.input)
        kh, kw = ints(op.kernel)
        sh, sw = ints(op.stride)
        top, _, left, _ = ints(op.padding)
        dh, dw = ints(op.dilation) if isinstance(op, tcp.MaxPool2dOp) else (1, 1)
        is_max = isinstance(op, tcp.MaxPool2dOp)
        start = literal(float("-inf")) if is_max else "0.0"
        acc = self.let(f"tl.full({self.tile}, {start}, tl.float32)", "acc")
        count = None
        if not is_max:
            count = self.let(f"tl.zeros({self.tile}, tl.float32)", "cnt")
        with self.block(f"for kk in range({kh * kw}):"):
            hi = self.let(f"({ho}) * {sh} + (kk // {kw}) * {dh} - {top}", "hi")
            wi = self.let(f"({wo}) * {sw} + (kk % {kw}) * {dw} - {left}", "wi")
            inside = self.let(f"({hi} >= 0) & ({hi} < {h}) & ({wi} >= 0) & ({wi} < {w})", "inb")
            inner_mask = self.let(f"{mask} & {inside}", "m")
            x = self.value(op.input, self.with_dims(shape_of(op.input), [n, c, hi, wi]), inner_mask)
            if is_max:
                self.line(f'{acc} = tl.maximum({acc}, tl.where({inside}, {x}, float("-inf")), propagate_nan=tl.PropagateNan.ALL)')
            else:
                self.line(f"{acc} = {acc} + tl.where({inside}, {x}, 0.0)")
                if scalar(op.count_include_pad):
                    pt, pb, pl, pr = ints(op.padding)
                    counted = f"({hi} >= -{pt}) & ({hi} < {h + pb}) & ({wi} >= -{pl}) & ({wi} < {w + pr})"
                else:
                    counted = inside
                self.line(f"{count} = {count} + tl.where({counted}, 1.0, 0.0)")
        if is_max:
            return acc
        return self.let(f"{acc} / {count}", "avg")


def yielded(block: Block) -> list[SSAValue]:
    last = block.last_op
    assert isinstance(last, tcp.YieldOp)
    return list(last.values)
