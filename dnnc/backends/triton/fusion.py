"""triton-fuse: wrap fusible chains of top-level tcp ops into ``tcp.isolated_group``
``{backend = "triton", kind = ...}``, one group per generated kernel.

Greedy producer-to-consumer fusion in program order: each op starts a group and
absorbs the groups of its operands' producers when the union is still one kernel
(``_legal``):

* at most one anchor (reduction, softmax, a norm, scan, selection, pooling, matmul,
  conv2d, attention); nothing after a top-k, whose outputs are its own results; or two
  convolutions summed (``ops.summed_products``), neither feeding the other, every
  output computed from both;
* after the anchor only elementwise ops (the epilogue runs on the anchor's result in
  registers, at the positions it was computed at); after a pooling anchor also layout
  ops (``LAYOUT_OPS``: transpose, reshape, slice, pad), since a pooled element is
  computed at whatever position is stored: ``transpose -> max_pool2d -> transpose``
  around a channels-last tensor is one NHWC -> NHWC kernel; after a convolution
  also transposes, stored at permuted positions (a 1x1 convolution feeding a cuDNN
  depthwise one stores NHWC, a depthwise one feeding a layer norm over channels too);
* outputs a kernel can store: a pointwise group's outputs have one element count; an
  anchored group's outputs are the anchor's result shape, or (row kernels only) the
  anchor input's shape (a residual sum stored on the way into a layer_norm) or the
  value the anchor's input transposes (a squeeze-excite block's activation, NHWC, beside
  its mean over H, W); a pooling
  group with layout ops after the anchor has outputs of one shape, all computed from
  the anchor;
* no cycle through an op outside the group.

A transpose back to NCHW of a runtime tensor that only ungrouped convolutions read as
their input is their prologue, never its producer's epilogue (``conv_prologue``): each
convolution then reads the channels-last tensor along its channels, where in its
producer's kernel the transpose would have that kernel store NCHW for all of them.
``triton-fuse`` gives each reader a copy of its own (a transpose in a kernel is index
arithmetic; one shared by two kernels would be a kernel of its own), and elementwise ops
before it that nothing else reads join the reader's kernel too (a squeeze-excite block's
scaling, run channels-last by ``sink-transposes``, is the projection's prologue). Such a transpose
that one reduction reads (a global mean), or one pooling whose result goes channels-last
again, never ends a product's kernel either (``reduction_prologue``): the product stores
NHWC and the reduction reads rows of contiguous channels, the pooling NHWC -> NHWC;
elementwise ops before it still fuse into the reader's kernel.

Only tcp ops directly in a function body are considered: ops already in an
``isolated_group`` or any other region, and non-tcp ops (``cudnn.graph``), are left
alone. ``tcp.param`` stays at top level and is captured; splat ``tcp.constant`` and
``tcp.iota`` are cloned into the groups that use them. A group of reshapes only is
not formed (a reshape of a contiguous tensor is a view). ``products=false`` leaves
matmul, batch_matmul and conv2d out of the groups (for another backend).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.passes import ModulePass

from dnnc.backends.interface import GROUP_BACKEND_ATTR, GROUP_KIND_ATTR
from dnnc.backends.triton.ops import (
    ELEMENTWISE,
    INDEX_OPS,
    LAYOUT_OPS,
    POOL_ANCHORS,
    PRODUCT_ANCHORS,
    ROW_ANCHORS,
    SELECT_ANCHORS,
    is_anchor,
    kind_of,
    summed_products,
)
from dnnc.ir import tcp
from dnnc.ir.analysis import (
    PINNED_ATTR,
    TO_NCHW,
    TO_NHWC,
    has_one_use,
    is_channelwise_conv,
    is_output_view,
    is_ungrouped_conv,
    transposes,
)
from dnnc.ir.attrs import ints
from dnnc.ir.types import numel, shape_of

CLONED = (tcp.ConstantOp, tcp.IotaOp)


@dataclass(frozen=True)
class TritonFuse(ModulePass):
    name = "triton-fuse"

    products: bool = True
    """Also take matmul, batch_matmul and conv2d (with their prologues and epilogues)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in op.ops:
            if isinstance(f, func.FuncOp) and f.body.blocks:
                _fuse_block(f.body.block, self.products)
                for top in f.body.block.ops:
                    top.attributes.pop(PART_ATTR, None)


PART_ATTR = "dnnc.part"
"""Set by the partitioner on ops it gave to one Triton group (an integer per group):
ops with different marks never share a kernel; unmarked ops join any group. The
mark is dropped when the group is built."""


def part_of(op: Operation) -> int | None:
    attr = op.attributes.get(PART_ATTR)
    return None if attr is None else int(attr.value.data)  # type: ignore[attr-defined]


def one_part(ops: Iterable[Operation | None]) -> bool:
    """Whether the partitioner gave ``ops`` (None for none) at most one part between them."""
    return len({part_of(op) for op in ops if op is not None} - {None}) <= 1


def fusion_groups(block: Block, products: bool = True, exclude: frozenset[Operation] = frozenset()) -> list[set[Operation]]:
    """The groups ``triton-fuse`` would form in ``block`` if the ops in ``exclude``
    were taken by another backend (the partitioner's Triton candidates)."""
    return _Fuser(
        block,
        products,
        exclude,
        frozenset(op for op in block.ops if conv_prologue(op)),
        frozenset(op for op in block.ops if reduction_prologue(op)),
    ).run()


def _candidate(op: Operation, products: bool) -> bool:
    if isinstance(op, CLONED) or not isinstance(op, tcp.TcpOp) or is_output_view(op):
        return False
    if isinstance(op, PRODUCT_ANCHORS):
        return products
    return isinstance(op, INDEX_OPS) or is_anchor(op)


def _top(op: Operation, block: Block) -> Operation | None:
    """The op of ``block`` that contains ``op`` (itself if it is there)."""
    while op is not None and op.parent_block() is not block:
        op = op.parent_op()
    return op


class _Fuser:
    def __init__(
        self,
        block: Block,
        products: bool,
        exclude: frozenset[Operation] = frozenset(),
        prologues: frozenset[Operation] = frozenset(),
        reduction_prologues: frozenset[Operation] = frozenset(),
    ):
        self.block = block
        self.prologues = prologues
        """``conv_prologue`` transposes (and their copies): their readers take them in."""
        self.reduction_prologues = reduction_prologues
        """``reduction_prologue`` transposes: they take in no product's group."""
        self.order = {op: i for i, op in enumerate(block.ops)}
        self.products = products
        self.exclude = exclude
        self.group_of: dict[Operation, int] = {}
        self.groups: dict[int, set[Operation]] = {}
        self._users: dict[Operation, set[Operation]] = {}

    def users(self, op: Operation) -> set[Operation]:
        """The block's ops that use ``op``'s results (found once: fusing rewrites nothing
        until ``run`` is done, and the legality checks ask again and again)."""
        found = self._users.get(op)
        if found is None:
            found = set()
            for r in op.results:
                for use in r.uses:
                    top = _top(use.operation, self.block)
                    if top is not None:
                        found.add(top)
            self._users[op] = found
        return found

    def run(self) -> list[set[Operation]]:
        for gid, op in enumerate(self.block.ops):
            if op in self.exclude or not _candidate(op, self.products):
                continue
            self.groups[gid] = {op}
            self.group_of[op] = gid
            if op in self.prologues:
                self._take_elementwise_producer(op)
                continue  # its reader takes it in
            for operand in op.operands:
                producer = operand.owner
                if not isinstance(producer, Operation) or producer not in self.group_of:
                    continue
                other = self.group_of[producer]
                gid = self.group_of[op]
                if other == gid:
                    continue
                if op in self.reduction_prologues and not self._prologue_may_take(op, self.groups[other]):
                    continue
                merged = self.groups[gid] | self.groups[other]
                if self._legal(merged):
                    for member in self.groups.pop(other):
                        self.group_of[member] = gid
                    self.groups[gid] = merged
        return [g for g in self.groups.values() if not all(isinstance(o, tcp.ReshapeOp) for o in g)]

    def _prologue_may_take(self, transpose: Operation, producer: set[Operation]) -> bool:
        """Whether a ``reduction_prologue`` transpose may join its producer's group: never a
        product's (it would store NCHW), and where the value it transposes has other readers,
        only a group its reduction may join too (the row kernel then stores that value at
        the positions it reads). Otherwise the kernel would store the value in both layouts:
        EfficientNet-B0's first SiLU so, NHWC and NCHW, took 89 us at batch 32 (H200)."""
        if any(isinstance(o, PRODUCT_ANCHORS) for o in producer):
            return False
        if has_one_use(transpose.operands[0]):
            return True
        (reader,) = [_top(u.operation, self.block) for u in transpose.results[0].uses]
        return one_part([*producer, reader])

    def _take_elementwise_producer(self, transpose: Operation) -> None:
        """A ``conv_prologue`` transpose takes in the elementwise ops before it that nothing
        else reads (a squeeze-excite block's scaling, moved channels-last by
        ``sink-transposes``): they become the convolution's prologue, where on their own
        they would be a kernel storing what the convolution reads once."""
        producer = transpose.operands[0].owner
        if not isinstance(producer, Operation) or producer not in self.group_of:
            return
        other = self.group_of[producer]
        ops = self.groups[other]
        readers = [_top(u.operation, self.block) for u in transpose.results[0].uses]
        if (
            any(is_anchor(o) for o in ops)
            or any(u.operation is not transpose for r in self._outputs(ops) for u in r.uses)
            or not one_part([*ops, *readers])
        ):
            return
        gid = self.group_of[transpose]
        merged = self.groups[gid] | self.groups.pop(other)
        for member in merged:
            self.group_of[member] = gid
        self.groups[gid] = merged

    def _outputs(self, ops: set[Operation]) -> list[SSAValue]:
        out = []
        for op in ops:
            for r in op.results:
                if any(_top(u.operation, self.block) not in ops for u in r.uses):
                    out.append(r)
        return out

    def _legal(self, ops: set[Operation]) -> bool:
        anchors = sorted((op for op in ops if is_anchor(op)), key=self.order.__getitem__)
        if len(anchors) > 1 and not summed_products(anchors):
            return False
        if not one_part(ops) or self._cycle(ops):
            return False
        outputs = self._outputs(ops)
        if not anchors:
            return len({numel(r) for r in outputs}) <= 1
        anchor = anchors[0]
        after = self._after(anchor, ops)
        if len(anchors) == 2:
            also = self._after(anchors[1], ops)
            if anchors[1] in after or anchor in also or any(r.owner not in after or r.owner not in also for r in outputs):
                return False
            after |= also
        if isinstance(anchor, SELECT_ANCHORS):
            return not after and all(r.owner is anchor for r in outputs)
        follow = _may_follow(anchor)
        if any(not isinstance(op, follow) for op in after):
            return False
        if any(isinstance(op, LAYOUT_OPS) for op in after):
            return len({shape_of(r) for r in outputs}) == 1 and all(r.owner is anchor or r.owner in after for r in outputs)
        result_shape = shape_of(anchor.results[0])
        input_shape = shape_of(anchor.operands[0])
        for r in outputs:
            if r.owner is anchor or r.owner in after:
                if shape_of(r) != result_shape:
                    return False
            elif not (isinstance(anchor, ROW_ANCHORS) and (shape_of(r) == input_shape or _transposed_into(r, anchor))):
                return False
        return True

    def _after(self, anchor: Operation, ops: set[Operation]) -> set[Operation]:
        seen: set[Operation] = set()
        stack = [anchor]
        while stack:
            for user in self.users(stack.pop()):
                if user in ops and user not in seen:
                    seen.add(user)
                    stack.append(user)
        return seen

    def _cycle(self, ops: set[Operation]) -> bool:
        """Some op outside ``ops`` both uses a result of ``ops`` and feeds ``ops``."""
        last = max(self.order[op] for op in ops)
        seen: set[Operation] = set()
        stack = [u for op in ops for u in self.users(op) if u not in ops]
        while stack:
            op = stack.pop()
            if op in seen or self.order.get(op, last + 1) > last:
                continue
            seen.add(op)
            for user in self.users(op):
                if user in ops:
                    return True
                stack.append(user)
        return False


def _transposed_into(value: SSAValue, anchor: Operation) -> bool:
    """The anchor's input is ``value`` transposed: a row kernel stores ``value`` at the
    positions it reads the input at (``rows``), as it stores a value of the input's shape."""
    owner = anchor.operands[0].owner
    return isinstance(owner, tcp.TransposeOp) and owner.input is value


def _back_to_nchw(op: Operation) -> bool:
    """A transpose back to NCHW that no pass pinned to its kernel: one a reader may take in."""
    return isinstance(op, tcp.TransposeOp) and PINNED_ATTR not in op.attributes and tuple(ints(op.permutation)) == TO_NCHW


def conv_prologue(op: Operation) -> bool:
    """A transpose of a runtime NHWC tensor back to NCHW that ungrouped or depthwise
    convolutions, and nothing else, read as their input: their prologue
    (``ops.reads_channels_last``; a depthwise one then runs on strips of contiguous
    channels, ``kernels._channelwise_strips``), never its producer's epilogue. In the producer's kernel the transpose would have it store
    NCHW, and each convolution read that: a window's K tiles H x W apart (ResNet-50's
    stage-1 3x3 convolution at batch 32 on an H200: 0.089 ms against 0.022-0.025 reading
    NHWC), a 1x1 one's pixels through pointer tiles where an NHWC tensor gives TMA tiles of
    rows. The partitioner times each convolution alone on the channels-last tensor it reads
    this way (``triton-channels-last-boundary``): where a Triton 3x3 convolution fed a
    block's expansion and downsample (ResNet-50 at batch 1), the transpose in the 3x3's
    kernel made that summed kernel run 16-30 us in the program against 6.5-9.5 timed."""
    if not _back_to_nchw(op):
        return False
    uses = list(op.result.uses)
    return bool(uses) and all((is_ungrouped_conv(u.operation) or is_channelwise_conv(u.operation)) and u.index == 0 for u in uses)


def reduction_prologue(op: Operation) -> bool:
    """A transpose of a runtime NHWC tensor back to NCHW that one reduction, and nothing
    else, reads: it joins the reduction's kernel, never a product's as its last epilogue
    op. In the product's kernel it would have the product store NCHW, channels H x W
    apart, and the reduction read that along its columns; in the reduction's kernel the
    product stores NHWC and a reduction over H and W reads rows of contiguous channels
    (``rows``). In ResNet-50's program on an H200, its last expansion (a Triton kernel)
    and the global mean after it ran 15.1 + 8.9 us at batch 32 and 43.3 + 25.1 at batch
    128 so joined, and 12.5 + 5.8 and 34.2 + 11.7 apart (``bench/compile_profile.py
    --own-kernels``, steps in place).

    A pooling whose result only goes channels-last again (``_pools_to_channels_last``)
    reads such a transpose the same way: its kernel runs NHWC -> NHWC, a program's
    elements along the channels in both tensors. Its producer's kernel storing NCHW
    instead had the pooling read NCHW and store NHWC, a tile transposed on the way:
    ResNet-50's max pool after a Triton stem ran 32-37 us at batch 32 on an H200 so, where
    NHWC -> NHWC after cuDNN's stem it runs 19."""
    if not _back_to_nchw(op):
        return False
    uses = list(op.result.uses)
    if len(uses) != 1:
        return False
    reader = uses[0].operation
    return isinstance(reader, tcp.ReduceOp) or _pools_to_channels_last(reader)


def _pools_to_channels_last(op: Operation) -> bool:
    """A pooling whose result only transposes to NHWC read it."""
    if not isinstance(op, POOL_ANCHORS) or not op.results[0].uses:
        return False
    return all(transposes(u.operation, TO_NHWC) for u in op.results[0].uses)


def _copy_conv_prologues(block: Block) -> frozenset[Operation]:
    """Each reader of a ``conv_prologue`` transpose gets a copy of its own, which fuses
    into its kernel whatever part the partitioner gave the transpose (the mark is dropped);
    returns the transposes and their copies."""
    found = []
    for op in list(block.ops):
        if not conv_prologue(op):
            continue
        op.attributes.pop(PART_ATTR, None)
        found.append(op)
        for use in list(op.result.uses)[1:]:
            copy = op.clone()
            block.insert_op_after(copy, op)
            use.operation.operands[use.index] = copy.results[0]
            found.append(copy)
    return frozenset(found)


def _may_follow(anchor: Operation) -> tuple[type, ...]:
    """The ops a group may hold after its anchor: elementwise ops, and also layout ops
    after a pooling (a pooled element is computed at whatever position is stored) and
    transposes after a convolution (its tile is stored at positions permuted as the
    transposes permute them, ``skeleton.store_outputs``: the channels-last copy a cuDNN
    convolution or a layer norm over channels reads next costs no kernel of its own)."""
    if isinstance(anchor, POOL_ANCHORS):
        return (*ELEMENTWISE, *LAYOUT_OPS)
    if isinstance(anchor, tcp.Conv2dOp):
        return (*ELEMENTWISE, tcp.TransposeOp)
    return ELEMENTWISE


def _build_group(ops: list[Operation], block: Block) -> tuple[tcp.IsolatedGroupOp, list[SSAValue]]:
    """A detached ``tcp.isolated_group`` computing ``ops`` and the values it replaces."""
    members = set(ops)
    body = Block()
    mapping: dict[SSAValue, SSAValue] = {}
    captures: list[SSAValue] = []
    cloned: dict[Operation, Operation] = {}
    for op in ops:
        for v in op.operands:
            if v in mapping or (isinstance(v.owner, Operation) and v.owner in members):
                continue
            source = v.owner
            if isinstance(source, CLONED):
                copy = source.clone()
                body.add_op(copy)
                cloned[source] = copy
                mapping[v] = copy.results[0]
            else:
                captures.append(v)
                mapping[v] = body.insert_arg(v.type, len(body.args))
        copy = op.clone(value_mapper=mapping)
        copy.attributes.pop(PART_ATTR, None)
        body.add_op(copy)
        for old, new in zip(op.results, copy.results):
            mapping[old] = new
    outputs = [r for op in ops for r in op.results if any(_top(u.operation, block) not in members for u in r.uses)]
    body.add_op(tcp.YieldOp([mapping[r] for r in outputs]))
    group = tcp.IsolatedGroupOp(captures, [r.type for r in outputs], body)
    group.attributes[GROUP_BACKEND_ATTR] = StringAttr("triton")
    group.attributes[GROUP_KIND_ATTR] = StringAttr(kind_of(ops, outputs))
    return group, outputs


def _fuse_block(block: Block, products: bool) -> None:
    prologues = _copy_conv_prologues(block)
    order = {op: i for i, op in enumerate(block.ops)}
    reductions = frozenset(op for op in block.ops if reduction_prologue(op))
    for op in reductions:  # it joins its reader's kernel, whatever part it was given
        op.attributes.pop(PART_ATTR, None)
    groups = [
        sorted(g, key=order.__getitem__)
        for g in _Fuser(block, products, prologues=prologues, reduction_prologues=reductions).run()
    ]
    if not groups:
        return
    built = []
    for ops in groups:
        group, replaced = _build_group(ops, block)
        built.append((ops, group, replaced))
    # Point every outside use at the group's results, then drop the originals (users first).
    for _, group, replaced in built:
        for old, new in zip(replaced, group.outputs):
            old.replace_all_uses_with(new)
    grouped = {op for ops, _, _ in built for op in ops}
    for op in sorted(grouped, key=order.__getitem__, reverse=True):
        op.detach()
        op.erase(safe_erase=False)
    _reorder(block, [(group, min(order[o] for o in ops)) for ops, group, _ in built], order)
    for op in list(block.ops):
        if isinstance(op, CLONED) and not any(r.uses for r in op.results):
            op.detach()
            op.erase()


def _reorder(block: Block, groups: list[tuple[tcp.IsolatedGroupOp, int]], order: dict[Operation, int]) -> None:
    """Insert the groups and re-sort the block topologically, keeping program order where
    it is free (a group takes the place of its first op)."""
    terminator = block.last_op
    assert terminator is not None
    rest = [op for op in block.ops if op is not terminator]
    for op in rest:
        op.detach()
    terminator.detach()
    position = {op: order[op] for op in rest}
    position.update(dict(groups))
    units: list[Operation] = [*rest, *(g for g, _ in groups)]
    producers = {r: u for u in units for r in u.results}
    waiting = {u: {producers[v] for v in _operands(u) if v in producers} for u in units}
    users: dict[Operation, list[Operation]] = {u: [] for u in units}
    for u, deps in waiting.items():
        for d in deps:
            users[d].append(u)
    ready = [(position[u], id(u), u) for u, deps in waiting.items() if not deps]
    heapq.heapify(ready)
    while ready:
        _, _, u = heapq.heappop(ready)
        block.add_op(u)
        for user in users[u]:
            waiting[user].discard(u)
            if not waiting[user]:
                heapq.heappush(ready, (position[user], id(user), user))
    block.add_op(terminator)


def _operands(op: Operation) -> list[SSAValue]:
    """Values an op needs, including those its nested regions use from outside."""
    values = list(op.operands)
    if isinstance(op, IRDLOperation) and op.regions:
        for inner in op.walk():
            values.extend(inner.operands)
    return values
