"""Reference semantics of the ``cudnn`` dialect, so lowered programs run on the CPU.

A ``cudnn.graph`` reads each operand's buffer through its descriptor (dims and
strides, as cuDNN does), runs its nodes, and writes each output through the
output strides into a row-major buffer. The same rules run on CUDA tensors when
a graph has no cuDNN engine and falls back to torch ops.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dnnc.backends.reference.rules import RULES, Env, Value, rule
from dnnc.ir import cudnn
from dnnc.ir.attrs import ints, scalar
from dnnc.ir.types import shape_of


def view_through(buffer: Value, dims: tuple[int, ...], strides: tuple[int, ...]) -> Value:
    """The descriptor's view of a tensor's row-major buffer."""
    return buffer.contiguous().reshape(-1).as_strided(dims, strides)


def write_through(value: Value, result_shape: tuple[int, ...], strides: tuple[int, ...]) -> Value:
    """A row-major tensor of ``result_shape`` whose buffer holds ``value`` laid out by ``strides``."""
    flat = torch.empty(int(value.numel()), dtype=value.dtype, device=value.device)
    flat.as_strided(tuple(value.shape), strides).copy_(value)
    return flat.reshape(result_shape)


@rule(cudnn.GraphOp)
def _graph(op: cudnn.GraphOp, args: list[Value], env: Env) -> list[Value]:
    block = op.body.block
    views = []
    for arg, value in zip(block.args, args):
        strides = cudnn.strides_of(arg.type)
        assert strides is not None
        views.append(view_through(value, shape_of(arg.type), strides))
    outputs = env.run_block(op, views)
    return [write_through(v, shape_of(r), s) for v, r, s in zip(outputs, op.outputs, op.output_strides())]


@rule(cudnn.ConvFpropOp)
def _conv(op: cudnn.ConvFpropOp, args: list[Value], env: Env) -> Value:
    x, w = args
    pre, post = ints(op.pre_padding), ints(op.post_padding)
    x = F.pad(x, (pre[1], post[1], pre[0], post[0]))
    groups = x.shape[1] // w.shape[1]
    return F.conv2d(x, w, stride=ints(op.stride), dilation=ints(op.dilation), groups=groups)


@rule(cudnn.MatmulOp)
def _matmul(op: cudnn.MatmulOp, args: list[Value], env: Env) -> Value:
    return torch.matmul(*args)


def _relu(op: cudnn.PointwiseOp, x: Value) -> Value:
    lo, hi = op.clips()
    return torch.clamp(x, min=0.0 if lo is None else lo, max=hi)


POINTWISE = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "max": torch.maximum,
    "min": torch.minimum,
    "gelu": F.gelu,
    "gelu_approx_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "swish": F.silu,
    "exp": torch.exp,
    "log": torch.log,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "neg": torch.neg,
    "abs": torch.abs,
    "erf": torch.erf,
}


@rule(cudnn.PointwiseOp)
def _pointwise(op: cudnn.PointwiseOp, args: list[Value], env: Env) -> Value:
    mode = op.mode.data
    if mode == "relu":
        return _relu(op, args[0])
    return POINTWISE[mode](*args)


@rule(cudnn.ReductionOp)
def _reduction(op: cudnn.ReductionOp, args: list[Value], env: Env) -> Value:
    (x,) = args
    axes = list(ints(op.axes))
    if not axes:
        return x
    mode = op.mode.data
    if mode == "add":
        return x.sum(axes, keepdim=True)
    if mode == "avg":
        return x.mean(axes, keepdim=True)
    if mode == "mul":
        return _prod(x, axes)
    return x.amax(axes, keepdim=True) if mode == "max" else x.amin(axes, keepdim=True)


def _prod(x: Value, axes: list[int]) -> Value:
    for a in axes:
        x = x.prod(a, keepdim=True)
    return x


@rule(cudnn.LayerNormOp)
def _layernorm(op: cudnn.LayerNormOp, args: list[Value], env: Env) -> Value:
    x, scale, bias = args
    return F.layer_norm(x, x.shape[1:], scale[0], bias[0], float(scalar(op.epsilon)))


@rule(cudnn.SdpaOp)
def _sdpa(op: cudnn.SdpaOp, args: list[Value], env: Env) -> Value:
    q, k, v = args
    causal = bool(scalar(op.causal))
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=float(scalar(op.scale)))


assert all(t in RULES for t in (*cudnn.NODE_OPS, cudnn.GraphOp))
