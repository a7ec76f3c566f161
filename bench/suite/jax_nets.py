"""The suite's networks written in ``jax.lax``, for XLA: NHWC activations, HWIO
weights, BatchNorm folded into the convolutions, the same weights as the PyTorch
models (taken from their ``state_dict`` by name). Each builder returns
``(fn, params)``: ``fn(params, *inputs)`` takes the PyTorch layout of the inputs
(NCHW images, token ids, hidden states) and returns the PyTorch layout."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

BN_EPS = 1e-5
Params = dict[str, Any]


def _folded(sd: Mapping[str, np.ndarray], conv: str, bn: str | None, dtype: Any) -> tuple[Any, Any]:
    """A convolution's HWIO weight and bias with the BatchNorm after it folded in."""
    w = sd[f"{conv}.weight"].astype(np.float32)
    b = sd[f"{conv}.bias"].astype(np.float32) if f"{conv}.bias" in sd else np.zeros(w.shape[0], np.float32)
    if bn is not None:
        scale = sd[f"{bn}.weight"] / np.sqrt(sd[f"{bn}.running_var"] + BN_EPS)
        w = w * scale[:, None, None, None]
        b = (b - sd[f"{bn}.running_mean"]) * scale + sd[f"{bn}.bias"]
    return jnp.asarray(w.transpose(2, 3, 1, 0), dtype), jnp.asarray(b, dtype)


def _conv(x: Any, wb: tuple[Any, Any], stride: int = 1, groups: int = 1) -> Any:
    w, b = wb
    k = w.shape[0]
    pad = (k - 1) // 2
    y = lax.conv_general_dilated(
        x, w, (stride, stride), [(pad, pad), (pad, pad)], dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=groups
    )
    return y + b


def _max_pool(x: Any) -> Any:
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), [(0, 0), (1, 1), (1, 1), (0, 0)])


def _linear(sd: Mapping[str, np.ndarray], name: str, dtype: Any) -> tuple[Any, Any | None]:
    w = jnp.asarray(sd[f"{name}.weight"].T, dtype)
    b = jnp.asarray(sd[f"{name}.bias"], dtype) if f"{name}.bias" in sd else None
    return w, b


def _dense(x: Any, wb: tuple[Any, Any | None]) -> Any:
    w, b = wb
    y = x @ w
    return y if b is None else y + b


def _layer_norm(x: Any, gb: tuple[Any, Any], eps: float) -> Any:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + eps) * gb[0] + gb[1]


def _norm(sd: Mapping[str, np.ndarray], name: str, dtype: Any) -> tuple[Any, Any]:
    return jnp.asarray(sd[f"{name}.weight"], dtype), jnp.asarray(sd[f"{name}.bias"], dtype)


def _nhwc(x: Any) -> Any:
    return jnp.transpose(x, (0, 2, 3, 1))


def conv_block(sd: Mapping[str, np.ndarray], dtype: Any) -> tuple[Callable[..., Any], Params]:
    params = {"conv": _folded(sd, "0", None, dtype)}

    def fn(p: Params, x: Any) -> Any:
        return jnp.transpose(jax.nn.relu(_conv(_nhwc(x), p["conv"])), (0, 3, 1, 2))

    return fn, params


RESNET_LAYERS = (3, 4, 6, 3)


def resnet50(sd: Mapping[str, np.ndarray], dtype: Any) -> tuple[Callable[..., Any], Params]:
    params: Params = {"stem": _folded(sd, "conv1", "bn1", dtype), "fc": _linear(sd, "fc", dtype), "blocks": []}
    for layer, count in enumerate(RESNET_LAYERS, start=1):
        for i in range(count):
            name = f"layer{layer}.{i}"
            block = {f"c{j}": _folded(sd, f"{name}.conv{j}", f"{name}.bn{j}", dtype) for j in (1, 2, 3)}
            if f"{name}.downsample.0.weight" in sd:
                block["down"] = _folded(sd, f"{name}.downsample.0", f"{name}.downsample.1", dtype)
            params["blocks"].append(block)
    strides = [2 if i == 0 and layer > 1 else 1 for layer, n in enumerate(RESNET_LAYERS, 1) for i in range(n)]

    def fn(p: Params, x: Any) -> Any:
        x = _max_pool(jax.nn.relu(_conv(_nhwc(x), p["stem"], 2)))
        for block, stride in zip(p["blocks"], strides):
            identity = _conv(x, block["down"], stride) if "down" in block else x
            y = jax.nn.relu(_conv(x, block["c1"]))
            y = jax.nn.relu(_conv(y, block["c2"], stride))
            x = jax.nn.relu(_conv(y, block["c3"]) + identity)
        return _dense(x.mean((1, 2)), p["fc"])

    return fn, params


def mobilenet_v2(sd: Mapping[str, np.ndarray], dtype: Any) -> tuple[Callable[..., Any], Params]:
    """``features.0`` stem, inverted residuals ``features.i.conv.j.{0,1}``, the last 1x1, classifier."""
    n_features = 1 + max(int(k.split(".")[1]) for k in sd if k.startswith("features."))
    params: Params = {"stem": _folded(sd, "features.0.0", "features.0.1", dtype), "blocks": []}
    last = n_features - 1
    params["last"] = _folded(sd, f"features.{last}.0", f"features.{last}.1", dtype)
    params["fc"] = _linear(sd, "classifier.1", dtype)
    shapes = []
    for i in range(1, last):
        convs = sorted({int(k.split(".")[3]) for k in sd if k.startswith(f"features.{i}.conv.")})
        block = [_folded(sd, f"features.{i}.conv.{j}.0", f"features.{i}.conv.{j}.1", dtype) for j in convs]
        params["blocks"].append(block)
        w = [b[0] for b in block]
        depthwise = next(k for k, wk in enumerate(w) if wk.shape[0] == 3)
        cin = w[0].shape[2] if depthwise else w[0].shape[3]
        cout = w[-1].shape[3]
        shapes.append((depthwise, cin, cout))
    strides = _mobilenet_strides()

    def fn(p: Params, x: Any) -> Any:
        x = jnp.clip(_conv(_nhwc(x), p["stem"], 2), 0, 6)
        for block, (depthwise, cin, cout), stride in zip(p["blocks"], shapes, strides):
            y = x
            for j, wb in enumerate(block):
                if j == depthwise:
                    y = jnp.clip(_conv(y, wb, stride, groups=wb[0].shape[3]), 0, 6)
                elif j < len(block) - 1:
                    y = jnp.clip(_conv(y, wb), 0, 6)
                else:
                    y = _conv(y, wb)
            x = x + y if stride == 1 and cin == cout else y
        x = jnp.clip(_conv(x, p["last"]), 0, 6)
        return _dense(x.mean((1, 2)), p["fc"])

    return fn, params


def _mobilenet_strides() -> list[int]:
    from dnnc.models.mobilenet import _SETTINGS

    return [s if i == 0 else 1 for _, _, n, s in _SETTINGS for i in range(n)]


def _attention(q: Any, k: Any, v: Any, heads: int, causal: bool) -> Any:
    b, t, d = q.shape

    def split(z: Any) -> Any:
        return z.reshape(b, t, heads, d // heads).transpose(0, 2, 1, 3)

    att = (split(q) @ split(k).transpose(0, 1, 3, 2)) / math.sqrt(d // heads)
    if causal:
        att = jnp.where(jnp.tril(jnp.ones((t, t), bool)), att, -jnp.inf)
    y = jax.nn.softmax(att.astype(jnp.float32), axis=-1).astype(q.dtype) @ split(v)
    return y.transpose(0, 2, 1, 3).reshape(b, t, d)


def gpt2_block(sd: Mapping[str, np.ndarray], dtype: Any, heads: int = 12) -> tuple[Callable[..., Any], Params]:
    """Embeddings, the ``h.*`` blocks (fused qkv, causal), final LayerNorm and LM head."""
    depth = 1 + max(int(k.split(".")[1]) for k in sd if k.startswith("h."))
    params: Params = {
        "wte": jnp.asarray(sd["wte.weight"], dtype),
        "wpe": jnp.asarray(sd["wpe.weight"], dtype),
        "ln_f": _norm(sd, "ln_f", dtype),
        "head": _linear(sd, "lm_head", dtype),
        "blocks": [
            {
                "ln_1": _norm(sd, f"h.{i}.ln_1", dtype),
                "qkv": _linear(sd, f"h.{i}.attn.c_attn", dtype),
                "proj": _linear(sd, f"h.{i}.attn.c_proj", dtype),
                "ln_2": _norm(sd, f"h.{i}.ln_2", dtype),
                "fc": _linear(sd, f"h.{i}.mlp.c_fc", dtype),
                "out": _linear(sd, f"h.{i}.mlp.c_proj", dtype),
            }
            for i in range(depth)
        ],
    }

    def fn(p: Params, idx: Any) -> Any:
        x = p["wte"][idx] + p["wpe"][: idx.shape[1]]
        for blk in p["blocks"]:
            q, k, v = jnp.split(_dense(_layer_norm(x, blk["ln_1"], 1e-5), blk["qkv"]), 3, axis=-1)
            x = x + _dense(_attention(q, k, v, heads, causal=True), blk["proj"])
            h = jax.nn.gelu(_dense(_layer_norm(x, blk["ln_2"], 1e-5), blk["fc"]), approximate=True)
            x = x + _dense(h, blk["out"])
        return _dense(_layer_norm(x, p["ln_f"], 1e-5), p["head"])

    return fn, params


def bert_layer(sd: Mapping[str, np.ndarray], dtype: Any, heads: int = 12) -> tuple[Callable[..., Any], Params]:
    names = ("query", "key", "value", "attn_out", "intermediate", "output")
    params: Params = {n: _linear(sd, n, dtype) for n in names}
    params |= {"attn_norm": _norm(sd, "attn_norm", dtype), "out_norm": _norm(sd, "out_norm", dtype)}

    def fn(p: Params, x: Any) -> Any:
        q, k, v = (_dense(x, p[n]) for n in ("query", "key", "value"))
        x = _layer_norm(x + _dense(_attention(q, k, v, heads, causal=False), p["attn_out"]), p["attn_norm"], 1e-12)
        h = jax.nn.gelu(_dense(x, p["intermediate"]), approximate=False)
        return _layer_norm(x + _dense(h, p["output"]), p["out_norm"], 1e-12)

    return fn, params


NETS: dict[str, Callable[..., tuple[Callable[..., Any], Params]]] = {
    "conv_block": conv_block,
    "resnet50": resnet50,
    "mobilenet_v2": mobilenet_v2,
    "gpt2_block": gpt2_block,
    "bert_layer": bert_layer,
}
"""By ``dnnc.models.FACTORIES`` name."""
