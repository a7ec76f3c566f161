"""What every Triton kernel skeleton shares: the group it computes (``GroupInfo``),
the source it becomes (``KernelSource``), and the pieces of that source (header,
parameter names, stores, the launch options)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.ir import Operation, SSAValue

from dnnc.backends.triton.emitter import POINTER_TYPES, CodegenError, Index, KernelEmitter, storage_type, yielded
from dnnc.backends.triton.ops import INDEX_OPS, is_anchor, kind_of, summed_products
from dnnc.ir import tcp
from dnnc.ir.attrs import ints, scalar
from dnnc.ir.text import print_ir
from dnnc.ir.types import describe, element_name, element_of, numel, shape_of

INT32_LIMIT = 2**31 - 1


@dataclass(frozen=True)
class TileDescriptor:
    """A kernel parameter that is a TMA descriptor over one of the launch's tensors."""

    param: str
    tensor: int
    """Position of the tensor among the launch's tensors (inputs, then outputs)."""
    shape: tuple[int, ...]
    """The tensor as a row-major array: a matrix (rows, columns), or (a Gluon kernel's,
    ``boxes``) an NHWC image."""
    block: tuple[int, ...]
    gluon: bool = False
    """A Gluon kernel's (``pingpong``, ``boxes``): its descriptor carries the shared-memory layout."""


@dataclass
class KernelSource:
    kind: str
    name: str
    text: str
    signature: dict[str, str]
    """Parameter name to Triton pointer type, inputs then outputs, in launch order."""
    grid: tuple[int, int, int]
    options: dict[str, int] = field(default_factory=dict)
    """``num_warps`` / ``num_stages`` for ``triton.compile`` and launches."""
    descriptors: tuple[TileDescriptor, ...] = field(default=(), compare=False)
    """The ``tensordesc`` parameters (after the pointers) and the tensors they cover,
    which the launch encodes: implied by the text and signature, so not compared."""
    fallback: KernelSource | None = field(default=None, compare=False, repr=False)
    """The same config with pointer tiles, for a launch whose tensors TMA cannot take."""
    scratch: tuple[tuple[str, str, int], ...] = field(default=(), compare=False)
    """(parameter, torch dtype name, elements) of the memory the kernel keeps between
    launches (``SCRATCH_PARAMS``, the last pointer parameters): allocated zeroed with the
    kernel and left zeroed by each launch; implied by the text and config, so not compared."""

    @property
    def tensors(self) -> int:
        """How many tensors a launch passes: the pointer parameters, less the kernel's own scratch."""
        return sum(1 for name, t in self.signature.items() if t.startswith("*") and name not in SCRATCH_PARAMS)


@dataclass
class GroupInfo:
    """What the skeletons need to know about a group."""

    group: tcp.IsolatedGroupOp
    ops: list[Operation]
    anchor: Operation | None
    outputs: list[SSAValue]
    kind: str
    summed: Operation | None = None
    """A second convolution the kernel computes over the anchor's output tile, its result
    joined with the anchor's in the epilogue (``ops.summed_products``)."""
    _text: str | None = field(default=None, repr=False, compare=False)

    def text(self) -> str:
        """The group as IR text (each source's header quotes it), printed once per
        ``GroupInfo``: one is made for all the configs of a group generated in a row,
        and printing the group again per config was a tenth of a cold compile."""
        if self._text is None:
            self._text = print_ir(self.group)
        return self._text

    @classmethod
    def of(cls, group: tcp.IsolatedGroupOp) -> GroupInfo:
        block = group.body.block
        ops = [op for op in block.ops if not isinstance(op, tcp.YieldOp)]
        for op in ops:
            if not (is_anchor(op) or isinstance(op, INDEX_OPS)):
                raise CodegenError(f"{op.name} has no Triton kernel kind (group at {describe(op.results[0].type)})")
        anchors = [op for op in ops if is_anchor(op)]
        if len(anchors) > 1 and not summed_products(anchors):
            names = ", ".join(op.name for op in anchors)
            raise CodegenError(
                "a Triton group holds at most one reduction, normalization, pooling or product, "
                f"or two convolutions of one result type summed; got {names}"
            )
        anchor = anchors[0] if anchors else None
        outputs = yielded(block)
        return cls(group, ops, anchor, outputs, kind_of(ops, outputs), anchors[1] if len(anchors) == 2 else None)

    def inside(self, op: Operation) -> bool:
        """Whether ``op`` is computed in the kernel (else its result is read from memory)."""
        return op.parent_block() is self.group.body.block

    def depends_on_anchor(self, v: SSAValue) -> bool:
        return self.anchor is not None and self.depends_on(v, self.anchor)

    def depends_on(self, v: SSAValue, source: Operation) -> bool:
        """Whether ``v`` is computed from ``source``'s result."""
        seen: set[SSAValue] = set()
        stack = [v]
        while stack:
            x = stack.pop()
            if x in seen:
                continue
            seen.add(x)
            if x.owner is source:
                return True
            if isinstance(x.owner, Operation):
                stack.extend(x.owner.operands)
        return False


def described(info: GroupInfo) -> list[str]:
    """A kernel module's first lines: what generated it and the group's IR, as comments."""
    lines = [f'"""Generated by dnnc: kernel kind `{info.kind}` for this group."""', "#"]
    return lines + [f"# {line}" for line in info.text().rstrip().splitlines()]


def header(info: GroupInfo, name: str, constants: dict[str, int]) -> list[str]:
    lines = described(info)
    lines += ["", "import triton", "import triton.language as tl", ""]
    lines += [f"{k} = tl.constexpr({v})" for k, v in constants.items()]
    return lines


SPLIT_PARTIALS = "split_partials"
"""A split-K product's float32 partial tiles, one per (output tile, slice of K)."""
SPLIT_ARRIVALS = "split_arrivals"
"""A split-K product's count, per output tile, of the slices that stored their partial."""
SCRATCH_PARAMS = (SPLIT_PARTIALS, SPLIT_ARRIVALS)
"""Parameters a kernel's launch fills from memory the kernel owns, not from the caller."""

INDEX_FLAG = "index_flag"
"""The last parameter of a kernel that gathers: an int32 it sets to 1 when an index
falls outside its dimension (the load reads 0 instead); the executor reads it after
the call and reports the op."""


def gathers(group: tcp.IsolatedGroupOp) -> bool:
    """Whether ``group`` loads through indices it reads at run time."""
    return any(isinstance(op, tcp.GATHER_OPS) for op in group.walk())


def pointer_names(info: GroupInfo) -> tuple[dict[SSAValue, str], dict[str, str], list[str]]:
    block = info.group.body.block
    pointers: dict[SSAValue, str] = {}
    signature: dict[str, str] = {}
    for i, arg in enumerate(block.args):
        pointers[arg] = f"in{i}"
        signature[f"in{i}"] = POINTER_TYPES[element_name(element_of(arg))]
    outs = []
    for i, y in enumerate(info.outputs):
        outs.append(f"out{i}")
        signature[f"out{i}"] = POINTER_TYPES[element_name(element_of(y))]
    if gathers(info.group):
        signature[INDEX_FLAG] = "*i32"
    return pointers, signature, outs


def assemble(
    info: GroupInfo, em: KernelEmitter, signature: dict[str, str], constants: dict[str, int], config: dict[str, int]
) -> tuple[str, str]:
    """The kernel's name and module text. A kernel launched with Programmatic Dependent
    Launch (``PDL`` in its config, ``configs.with_launch``) waits for the kernel before it
    at its first line, in every program."""
    name = f"dnnc_{info.kind}"
    lines = header(info, name, constants)
    wait = ["    tl.extra.cuda.gdc_wait()"] if config.get("PDL") else []
    lines += ["", "", "@triton.jit", f"def {name}({', '.join(signature)}):", *wait, *em.lines, ""]
    return name, "\n".join(lines)


def product_sizes(op: Operation) -> tuple[int, int, int, int]:
    """(M, N, K, batch) of a product as a GEMM: a convolution's rows are its output
    pixels, its columns the output channels of one group, K a group's input channels
    times the window, its batch the groups."""
    if isinstance(op, tcp.Conv2dOp):
        nb, _, ho, wo = shape_of(op.results[0])
        o, cg, kh, kw = shape_of(op.weight)
        groups = int(scalar(op.groups))
        return nb * ho * wo, o // groups, cg * kh * kw, groups
    lhs, rhs = shape_of(op.operands[0]), shape_of(op.operands[1])
    return lhs[-2], rhs[-1], lhs[-1], lhs[0] if len(lhs) == 3 else 1


def store_output(em: KernelEmitter, out: str, y: SSAValue, value: str, offset: str, mask: str) -> None:
    em.line(f"tl.store({out} + {offset}, {value}.to({storage_type(y)}), mask={mask})")


def anchor_axes(info: GroupInfo, y: SSAValue) -> tuple[int, ...]:
    """For each axis of the output ``y``, the axis of the anchor's result it moves with.
    A product's outputs are its result through elementwise ops and transposes: a
    convolution whose consumer wants it channels-last (a cuDNN convolution next) stores
    NHWC from its epilogue instead of leaving a transpose kernel to read it back."""
    anchor = info.anchor
    assert anchor is not None
    shape = shape_of(anchor.results[0])
    axes = list(range(len(shape_of(y))))
    v = y
    while v is not anchor.results[0]:
        op = v.owner
        if isinstance(op, tcp.TransposeOp):
            perm = ints(op.permutation)
            axes = [perm[a] for a in axes]
            v = op.input
            continue
        if not isinstance(op, tcp.ELEMENTWISE_OPS):
            break
        follows = [x for x in op.operands if info.depends_on_anchor(x)]
        if not follows or len(shape_of(follows[0])) != len(axes):
            break
        v = follows[0]
    if v is not anchor.results[0] or tuple(shape[a] for a in axes) != shape_of(y):
        raise CodegenError(
            f"{anchor.name}: group outputs must be its result through elementwise ops and transposes, got {describe(y.type)}"
        )
    return tuple(axes)


def store_outputs(
    em: KernelEmitter, info: GroupInfo, outs: list[str], anchor_ix: Index, mask: str, tile_store: TileStore | None = None
) -> None:
    """Stores every output of a product group from the tile computed at ``anchor_ix``
    (one expression per axis of the anchor's result), each at its own positions: those
    of the anchor's axes, permuted as the output's transposes permute them.
    ``tile_store`` stores an output whole where it can (through TMA) and says so."""
    assert anchor_ix.dims is not None
    offsets: dict[Index, str] = {}
    for i, (y, out) in enumerate(zip(info.outputs, outs)):
        ix = Index(shape_of(y), dims=tuple(anchor_ix.dims[a] for a in anchor_axes(info, y)))
        if tile_store is not None and tile_store(i, y, ix):
            continue
        if ix not in offsets:
            offsets[ix] = em.let(f"tl.broadcast_to({em.flat(ix)}, {em.tile})", "offs")
        store_output(em, out, y, em.value(y, ix, mask), offsets[ix], mask)


TileStore = Callable[[int, SSAValue, Index], bool]
"""(output number, output value, its positions) -> whether it was stored as a tile."""


def index_type(total: int) -> str:
    return ".to(tl.int64)" if total > INT32_LIMIT else ""


def pow2(n: int) -> int:
    """The power of two at or above ``n`` (``tl.arange`` extents must be powers of two)."""
    return 1 << max(0, math.ceil(math.log2(max(1, n))))


def largest_tensor(info: GroupInfo) -> int:
    """Elements of the largest tensor a kernel addresses (a pool's input outgrows its output)."""
    return max(numel(v) for v in (*info.group.body.block.args, *info.outputs))


def launch_options(config: dict[str, int]) -> dict[str, int]:
    """``triton.compile``'s options: warps, stages, and ``launch_pdl`` (its launcher then
    launches with the programmatic stream serialization attribute)."""
    options = {k: v for k, v in config.items() if k in ("num_warps", "num_stages")}
    return {**options, "launch_pdl": True} if config.get("PDL") else options


def one_accumulator(info: GroupInfo) -> bool:
    """Whether two summed convolutions can share one accumulator: each result reaches the
    add that joins them through transposes and adds of values neither depends on (a
    bias), the same transposes both ways, every value on the way read once. The epilogue
    then reads the anchor's accumulator, which holds both products, and a zero for the
    other (``acc + b1 + 0.0 + b2``): one float32 tile in registers where two would be."""
    assert info.anchor is not None and info.summed is not None
    ends = []
    for product, other in ((info.anchor, info.summed), (info.summed, info.anchor)):
        v, moves = product.results[0], []
        while True:
            uses = list(v.uses)
            if len(uses) != 1:
                return False
            user = uses[0].operation
            if isinstance(user, tcp.TransposeOp):
                moves.append(tuple(ints(user.permutation)))
            elif not isinstance(user, tcp.AddOp) or user.operands[0] is user.operands[1]:
                return False
            else:
                rest = user.operands[1] if user.operands[0] is v else user.operands[0]
                if info.depends_on(rest, other):
                    ends.append((user, moves))
                    break
            v = user.results[0]
    return ends[0][0] is ends[1][0] and ends[0][1] == ends[1][1]
