"""Row kernels: reductions, softmax, layer and RMS norms, running sums, positions
of extremes, top-k.

A program owns ``BLOCK_M`` rows; the reduced (or scanned) dimensions, any set of
axes, are its columns. When the input is contiguous along a row axis instead (a
mean over H, W of an NHWC tensor), positions are written per dimension so Triton
sees loads contiguous along the rows. If a row fits in ``BLOCK_R`` it is held in
registers and read once; otherwise each pass loops over the row in ``BLOCK_R``
chunks (softmax and the norms then read it 2-3 times, top-k ``k`` times). Outputs
are the anchor's result and elementwise ops of it, or values of the anchor input's
shape computed on the way (a residual sum before a norm).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

from xdsl.ir import Operation, SSAValue

from dnnc.backends.triton.emitter import TL_TYPES, CodegenError, Index, KernelEmitter
from dnnc.backends.triton.layout import load_axis
from dnnc.backends.triton.skeleton import (
    GroupInfo,
    KernelSource,
    assemble,
    index_type,
    launch_options,
    pointer_names,
    store_output,
)
from dnnc.ir import tcp
from dnnc.ir.attrs import ints, scalar
from dnnc.ir.types import describe, element_name, element_of, is_float, shape_of

ROW_KINDS = ("reduce", "softmax", "layer_norm", "rms_norm", "scan", "topk")
"""The kernel kinds this module generates."""

SELECTIONS = (tcp.ArgmaxOp, tcp.ArgminOp, tcp.TopkOp)
"""Anchors whose outputs are positions (and values) picked from the row."""


def row_axes(op: Operation) -> list[int]:
    rank = len(shape_of(op.operands[0]))
    if isinstance(op, tcp.ReduceOp):
        return list(ints(op.axes))
    if isinstance(op, (tcp.SoftmaxOp, tcp.CumsumOp, *SELECTIONS)):
        return [scalar(op.axis)]
    assert isinstance(op, (tcp.LayerNormOp, tcp.RmsNormOp))
    return list(range(scalar(op.axis), rank))


class _Passes:
    """Column passes over the rows: one loop each, or one shared tile when a row fits."""

    def __init__(self, em: KernelEmitter, r: int, looped: bool):
        self.em, self.r, self.looped, self.opened = em, r, looped, False

    def __call__(self) -> contextlib.AbstractContextManager[None]:
        em = self.em

        def columns() -> None:
            em.line("cols = c0 + tl.arange(0, BLOCK_R)[None, :]" if self.looped else "cols = tl.arange(0, BLOCK_R)[None, :]")
            em.line(f"cmask = cols < {self.r}")
            em.line("mask = rmask & cmask")

        @contextlib.contextmanager
        def one_pass() -> Iterator[None]:
            if self.looped:
                with em.block(f"for c0 in range(0, {self.r}, BLOCK_R):"):
                    columns()
                    yield
            else:
                if not self.opened:
                    columns()
                    self.opened = True
                yield

        return one_pass()


TILE = "(BLOCK_M, BLOCK_R)"


class _Row:
    """One row kernel being written: the positions of rows and columns, the passes
    over the columns, and the group's outputs by where they are stored."""

    def __init__(self, info: GroupInfo, config: dict[str, int], interpret: bool):
        op = info.anchor
        assert op is not None
        self.info, self.op, self.x = info, op, op.operands[0]
        self.shape = shape = shape_of(self.x)
        self.axes = axes = row_axes(op)
        self.row_shape = [n for i, n in enumerate(shape) if i not in axes]
        self.red_shape = [shape[a] for a in axes]
        self.rows, self.r = math.prod(self.row_shape), math.prod(self.red_shape)
        pointers, self.signature, outs = pointer_names(info)
        self.em = em = KernelEmitter(pointers, interpret)
        em.tile = TILE
        em.line(f"pid = tl.program_id(0){index_type(self.rows * self.r)}")
        em.line("rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]")
        em.line(f"rmask = rows < {self.rows}")
        # A flat position keeps loads contiguous along the columns; along a row axis (an
        # NHWC input reduced over H, W) only positions per dimension show it to Triton.
        along_rows = load_axis(self.x, info.inside) not in (None, *axes)
        self.trailing = axes == list(range(len(shape) - len(axes), len(shape))) and not along_rows
        self.row_dims = None if self.trailing else em.dims(Index(tuple(self.row_shape), flat="rows"))
        self.passes = _Passes(em, self.r, config["BLOCK_R"] < self.r)
        self.full_outputs, self.row_outputs = self._classify(outs)

    def _classify(self, outs: list[str]) -> tuple[list, list]:
        """Outputs shaped like the input (stored per element) and row results (a
        reduction's, or a selection's: one value per row and pick)."""
        op, info = self.op, self.info
        result_shape = shape_of(op.results[0])
        full, per_row = [], []
        for y, out in zip(info.outputs, outs):
            if self._transposed_in(y) is not None:
                full.append((y, out))
                continue
            if isinstance(op, tcp.TopkOp):
                if y not in op.results:
                    raise CodegenError(f"{op.name}: a group output must be its values or indices, got {describe(y.type)}")
                per_row.append((y, out))
                continue
            row_space = isinstance(op, (tcp.ReduceOp, *SELECTIONS)) and (info.depends_on_anchor(y) or shape_of(y) != self.shape)
            if row_space and shape_of(y) == result_shape:
                per_row.append((y, out))
            elif not row_space and shape_of(y) == self.shape:
                full.append((y, out))
            else:
                raise CodegenError(
                    f"{op.name} over {describe(self.x.type)}: a group output of {describe(y.type)} is neither a row "
                    f"result ({list(result_shape)}) nor shaped like the input"
                )
        return full, per_row

    def _transposed_in(self, y: SSAValue) -> tcp.TransposeOp | None:
        """Where the anchor's input is ``y`` transposed, that transpose (a squeeze-excite
        block's activation, stored NHWC beside its mean over H, W); else None."""
        owner = self.x.owner
        if isinstance(owner, tcp.TransposeOp) and owner.input is y and not self.info.depends_on_anchor(y):
            return owner
        return None

    def full_index(self) -> Index:
        em, shape, r = self.em, self.shape, self.r
        if self.trailing:
            return Index(shape, flat=f"rows * {r} + cols" if r != 1 else "rows")
        assert self.row_dims is not None
        col_dims = iter(em.dims(Index(tuple(self.red_shape), flat="cols")))
        rd = iter(self.row_dims)
        return Index(shape, dims=tuple(next(col_dims) if i in self.axes else next(rd) for i in range(len(shape))))

    def load(self) -> tuple[Index, str]:
        """The input at this pass's positions (with what the group computes on the way)."""
        ix = self.full_index()
        return ix, self.em.value(self.x, ix, "mask")

    def store_full(self, ix: Index) -> None:
        for y, out in self.full_outputs:
            transpose = self._transposed_in(y)
            at = ix if transpose is None else self.em.before_transpose(transpose, ix)
            v = self.em.value(y, at, "mask")
            store_output(self.em, out, y, v, f"tl.broadcast_to({self.em.flat(at)}, {TILE})", "mask")

    def store_rows(self, value: str) -> None:
        """A per-row result (``[BLOCK_M, 1]``) and the epilogue ops of it."""
        row_ix = Index(tuple(shape_of(self.op.results[0])), flat="rows")
        self.em.anchors[self.op.results[0]] = (row_ix, value)
        with self.em.tiled("(BLOCK_M, 1)"):
            for y, out in self.row_outputs:
                v = self.em.value(y, row_ix, "rmask")
                store_output(self.em, out, y, v, "rows", "rmask")


def _reduce(k: _Row) -> None:
    em, op, x = k.em, k.op, k.x
    elem = element_of(x)
    boolean = element_name(elem) == "i1"
    acc_type = _accumulator(elem)
    is_max = isinstance(op, tcp.ReduceMaxOp)
    ident = _lowest(elem) if is_max else "0"
    em.line(f"acc = tl.full({TILE}, {ident}, {acc_type})")
    with k.passes():
        ix, xv = k.load()
        if boolean:
            xv = em.let(f"{xv}.to(tl.int32)", "x")
        part = f"tl.where(mask, {xv}, {ident})"
        if is_max:
            nan = ", propagate_nan=tl.PropagateNan.ALL" if is_float(elem) else ""
            em.line(f"acc = tl.maximum(acc, {part}{nan})")
        else:
            em.line(f"acc = acc + {part}")
        k.store_full(ix)
    red = em.let(f"tl.{'max' if is_max else 'sum'}(acc, 1)[:, None]", "red")
    if isinstance(op, tcp.ReduceMeanOp):
        red = em.let(f"{red} / {k.r}", "red")
    if boolean:
        red = em.let(f"{red} != 0", "red")
    k.store_rows(red)


def _accumulator(elem: object) -> str:
    if is_float(elem):  # type: ignore[arg-type]
        return "tl.float32"
    name = element_name(elem)  # type: ignore[arg-type]
    return "tl.int32" if name == "i1" else TL_TYPES[name]


def _lowest(elem: object) -> str:
    """Below every value of the type (booleans count as 0 and 1)."""
    if is_float(elem):  # type: ignore[arg-type]
        return 'float("-inf")'
    name = element_name(elem)  # type: ignore[arg-type]
    return "0" if name == "i1" else str(-(2 ** (63 if name == "i64" else 31)))


def _highest(elem: object) -> str:
    if is_float(elem):  # type: ignore[arg-type]
        return 'float("inf")'
    name = element_name(elem)  # type: ignore[arg-type]
    return "1" if name == "i1" else str(2 ** (63 if name == "i64" else 31) - 1)


def _softmax(k: _Row) -> None:
    em = k.em
    em.line(f'mx = tl.full({TILE}, float("-inf"), tl.float32)')
    with k.passes():
        _, xv = k.load()
        em.line(f'mx = tl.maximum(mx, tl.where(mask, {xv}, float("-inf")))')
    em.line("row_max = tl.max(mx, 1)[:, None]")
    em.line(f"sm = tl.zeros({TILE}, tl.float32)")
    with k.passes():
        _, xv = k.load()
        em.line(f"sm = sm + tl.where(mask, tl.exp({xv} - row_max), 0.0)")
    em.line("row_sum = tl.sum(sm, 1)[:, None]")
    with k.passes():
        ix, xv = k.load()
        em.anchors[k.op.results[0]] = (ix, em.let(f"tl.exp({xv} - row_max) / row_sum", "y"))
        k.store_full(ix)


def _norm(k: _Row) -> None:
    """Layer norm (mean, then the variance about it) and RMS norm (the mean square)."""
    em, op = k.em, k.op
    assert isinstance(op, (tcp.LayerNormOp, tcp.RmsNormOp))
    centered = isinstance(op, tcp.LayerNormOp)
    if centered:
        em.line(f"s1 = tl.zeros({TILE}, tl.float32)")
        with k.passes():
            _, xv = k.load()
            em.line(f"s1 = s1 + tl.where(mask, {xv}, 0.0)")
        em.line(f"mean = tl.sum(s1, 1)[:, None] / {k.r}")
    em.line(f"s2 = tl.zeros({TILE}, tl.float32)")
    with k.passes():
        _, xv = k.load()
        d = em.let(f"tl.where(mask, {xv} - mean, 0.0)" if centered else f"tl.where(mask, {xv}, 0.0)", "d")
        em.line(f"s2 = s2 + {d} * {d}")
    em.line(f"rstd = tl.rsqrt(tl.sum(s2, 1)[:, None] / {k.r} + {scalar(op.epsilon)!r})")
    with k.passes():
        ix, xv = k.load()
        cols = Index(tuple(k.red_shape), flat="cols")
        with em.tiled("(1, BLOCK_R)"):
            w = em.value(op.weight, cols, "cmask")
            b = em.value(op.bias, cols, "cmask") if centered else None
        y = f"({xv} - mean) * rstd * {w} + {b}" if centered else f"{xv} * rstd * {w}"
        em.anchors[op.results[0]] = (ix, em.let(y, "y"))
        k.store_full(ix)


def _scan(k: _Row) -> None:
    """A running sum along the row: within a tile by ``tl.cumsum``, across tiles by a
    carried row total."""
    em, op = k.em, k.op
    acc_type = _accumulator(element_of(k.x))
    em.line(f"carry = tl.zeros((BLOCK_M, 1), {acc_type})")
    with k.passes():
        ix, xv = k.load()
        part = em.let(f"tl.where(mask, {xv}, 0).to({acc_type})", "x")
        em.anchors[op.results[0]] = (ix, em.let(f"tl.cumsum({part}, 1) + carry", "cs"))
        k.store_full(ix)
        em.line(f"carry = carry + tl.sum({part}, 1)[:, None]")


def _best(k: _Row, largest: bool, after: tuple[str, str, str] | None) -> tuple[str, str, str]:
    """The row's best element, by class (NaN ranks above every number: first when
    taking the largest, last otherwise), then value (largest or smallest), then index;
    among the elements ranked after ``after`` (a previous best's class, value and
    index) if given. Returns its class, value and index as ``[BLOCK_M, 1]`` names."""
    em, elem = k.em, element_of(k.x)
    floating = is_float(elem)
    acc = _accumulator(elem)
    better, worst = (">", _lowest(elem)) if largest else ("<", _highest(elem))
    em.line("bc = tl.full((BLOCK_M, 1), -1, tl.int32)")  # -1: nothing picked yet
    em.line(f"bv = tl.full((BLOCK_M, 1), {worst}, {acc})")
    em.line(f"bi = tl.full((BLOCK_M, 1), {k.r}, tl.int32)")
    with k.passes():
        _, xv = k.load()
        # Rank the values the input holds: a fused producer's result, rounded to the
        # input's type first, so that values equal in that type tie as they do unfused.
        stored = TL_TYPES[element_name(elem)]
        rounded = f"{xv}.to({stored}, fp_downcast_rounding='rtne').to({acc})" if floating and stored != acc else f"{xv}.to({acc})"
        xv = em.let(rounded, "x")
        if floating:
            nan = em.let(f"{xv} != {xv}", "nan")
            c = em.let(f"{nan}.to(tl.int32)" if largest else f"1 - {nan}.to(tl.int32)", "cls")
        else:  # integers are all numbers: one class
            c = em.let(f"tl.full({TILE}, {0 if largest else 1}, tl.int32)", "cls")
        ok = "mask"
        if after is not None:
            pc, pv, pi = after
            same = em.let(f"({xv} == {pv}) | ({nan} & ({pv} != {pv}))" if floating else f"{xv} == {pv}", "same")
            ranked = f"({pc} > {c}) | (({pc} == {c}) & ({pv} {better} {xv})) | (({pc} == {c}) & {same} & ({pi} < cols))"
            ok = em.let(f"mask & ({ranked})", "ok")
        cc = em.let(f"tl.max(tl.where({ok}, {c}, -1), 1)[:, None]", "cc")
        sel = em.let(f"{ok} & ({c} == {cc})", "sel")
        cv = em.let(f"tl.{'max' if largest else 'min'}(tl.where({sel}, {xv}, {worst}), 1)[:, None]", "cv")
        sel = em.let(f"{sel} & (({xv} == {cv}) | {nan})" if floating else f"{sel} & ({xv} == {cv})", "sel")
        ci = em.let(f"tl.min(tl.where({sel}, cols, {k.r}), 1)[:, None]", "ci")
        if floating:  # the NaN class: its value is NaN
            cv = em.let(f'tl.where({cc} == {1 if largest else 0}, float("nan"), {cv})', "cv")
        win = em.let(f"({cc} > bc) | (({cc} == bc) & ({cc} >= 0) & ({cv} {better} bv))", "win")
        em.line(f"bc = tl.where({win}, {cc}, bc)")
        em.line(f"bv = tl.where({win}, {cv}, bv)")
        em.line(f"bi = tl.where({win}, {ci}, bi)")
    return "bc", "bv", "bi"


def _arg_extreme(k: _Row) -> None:
    assert isinstance(k.op, (tcp.ArgmaxOp, tcp.ArgminOp))
    _, _, index = _best(k, k.op.LARGEST, None)
    k.store_rows(k.em.let(f"{index}.to(tl.int64)", "idx"))


def _topk(k: _Row) -> None:
    """``k`` passes, each picking the next element after the previous pick."""
    em, op = k.em, k.op
    assert isinstance(op, tcp.TopkOp)
    count, largest = scalar(op.k), bool(scalar(op.largest))
    elem = element_of(k.x)
    em.line("pc = tl.full((BLOCK_M, 1), 2, tl.int32)")  # above every class: every element comes after
    em.line(f"pv = tl.zeros((BLOCK_M, 1), {_accumulator(elem)})")
    em.line("pi = tl.full((BLOCK_M, 1), -1, tl.int32)")
    result = shape_of(op.values)
    axis = scalar(op.axis)
    row_dims = em.dims(Index(tuple(k.row_shape), flat="rows"))
    with em.block(f"for j in range({count}):"):
        c, v, i = _best(k, largest, ("pc", "pv", "pi"))
        dims = iter(row_dims)
        out_ix = Index(result, dims=tuple("j" if d == axis else next(dims) for d in range(len(result))))
        offset = em.flat(out_ix)
        for y, out in k.row_outputs:
            value = v if y is op.values else f"{i}.to(tl.int64)"
            em.line(f"tl.store({out} + {offset}, ({value}).to({TL_TYPES[element_name(element_of(y))]}), mask=rmask)")
        em.line(f"pc = {c}")
        em.line(f"pv = {v}")
        em.line(f"pi = {i}")


BODIES = {
    tcp.ReduceSumOp: _reduce,
    tcp.ReduceMaxOp: _reduce,
    tcp.ReduceMeanOp: _reduce,
    tcp.SoftmaxOp: _softmax,
    tcp.LayerNormOp: _norm,
    tcp.RmsNormOp: _norm,
    tcp.CumsumOp: _scan,
    tcp.ArgmaxOp: _arg_extreme,
    tcp.ArgminOp: _arg_extreme,
    tcp.TopkOp: _topk,
}


def rows_kernel(info: GroupInfo, config: dict[str, int], interpret: bool) -> KernelSource:
    k = _Row(info, config, interpret)
    BODIES[type(k.op)](k)
    name, text = assemble(info, k.em, k.signature, {"BLOCK_M": config["BLOCK_M"], "BLOCK_R": config["BLOCK_R"]}, config)
    return KernelSource(info.kind, name, text, k.signature, (math.ceil(k.rows / config["BLOCK_M"]), 1, 1), launch_options(config))
