"""A model compiled for a range of shapes: one compiled program per bucket, called
with inputs of any size in the range.

An input whose sizes are a bucket's runs that bucket's program as it is. Any other
is copied into the front of zero-filled buffers of the next bucket up (kept per
bucket, so from its second call on the bucket's CUDA graph reads them directly,
with no copy of its own), and the outputs are cut back to the real sizes (views).
On a GPU the buckets' programs share their weights and their memory arena
(``runtime.sharing``), so they run one at a time, as calls of one program do.

Imports nothing of the compiler: a bucketed artifact runs without it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
import torch.utils._pytree as pytree

from dnnc.buckets import BucketPlan, Key, copy_padded, cut, shape_problem
from dnnc.compiled import CompiledModule, InferenceModule
from dnnc.errors import DnncError, InputError
from dnnc.runtime.signature import as_tensors


class BucketedModule(InferenceModule):
    """Called like the model; ``plan`` says the ranges and buckets, ``modules`` holds
    each bucket's compiled program."""

    def __init__(
        self, plan: BucketPlan, modules: Mapping[Key, CompiledModule], build: Callable[[Key], CompiledModule] | None = None
    ):
        """``build``: compiles a bucket the first time an input needs it (then ``modules``
        may hold only some); without it every bucket must be in ``modules``."""
        missing = [plan.label(k) for k in plan.buckets() if k not in modules]
        if missing and build is None:
            raise DnncError(f"bucketed module: no program for bucket {missing[0]}")
        if not modules:
            raise DnncError("bucketed module: no bucket compiled")
        self.plan = plan
        self.modules = {k: modules[k] for k in plan.buckets() if k in modules}
        self._build = build
        first = next(iter(self.modules.values()))
        self.device = first.device
        self.target = first.target
        self._padding: dict[tuple[Key, int], tuple[torch.Tensor, tuple[int, ...] | None]] = {}
        """(bucket, input) -> the buffer padded inputs are copied into, and the extent it holds."""

    def __call__(self, *args: Any) -> Any:
        inputs = args if all(type(a) is torch.Tensor for a in args) else as_tensors(args)
        sizes = self.plan.measure(inputs)
        key = self.plan.bucket_for(sizes)
        module = self._module(key)
        if key == sizes:
            return module(*inputs)
        outputs = module(*self._padded(key, inputs))
        real = dict(zip(self.plan.names, sizes))
        leaves, spec = pytree.tree_flatten(outputs)
        tensor_index = 0
        for i, leaf in enumerate(leaves):
            if isinstance(leaf, torch.Tensor):
                axes = self.plan.output_axes[tensor_index] if tensor_index < len(self.plan.output_axes) else {}
                leaves[i] = cut(leaf, axes, real)
                tensor_index += 1
        return pytree.tree_unflatten(leaves, spec)

    def _module(self, key: Key) -> CompiledModule:
        module = self.modules.get(key)
        if module is None:
            assert self._build is not None
            module = self.modules[key] = self._build(key)
        return module

    def _padded(self, key: Key, inputs: Any) -> list[torch.Tensor]:
        module = self.modules[key]
        padded = []
        for i, (x, axes, spec) in enumerate(zip(inputs, self.plan.input_axes, module.input_specs)):
            if not axes:
                padded.append(x)
                continue
            held = self._padding.get((key, i))
            if held is None or held[0].dtype != x.dtype or held[0].device != x.device:
                with torch.inference_mode():  # never part of an autograd graph; filled in place every call
                    held = (torch.zeros(spec.shape, dtype=x.dtype, device=x.device), None)
            buffer, previous = held
            problem = shape_problem(f"input {i}", x.shape, buffer.shape, axes)
            if problem is not None:
                raise InputError(problem)
            with torch.inference_mode():
                extent = copy_padded(buffer, x, axes, previous)
            self._padding[(key, i)] = (buffer, extent)
            padded.append(buffer)
        return padded

    def bucket(self, **sizes: int) -> CompiledModule:
        """The program of the bucket that runs inputs of these sizes (``batch=5``: the
        bucket 8's), for ``bind`` or to look at its kernels."""
        unknown = sorted(set(sizes) - set(self.plan.names))
        if unknown:
            raise DnncError(f"bucket({unknown[0]}=...): not a dynamic dimension (dynamic: {', '.join(self.plan.names)})")
        largest = self.plan.buckets()[0]
        wanted = tuple(sizes.get(n, s) for n, s in zip(self.plan.names, largest))
        for name, size in zip(self.plan.names, wanted):
            r = self.plan.ranges[name]
            if not r.low <= size <= r.high:
                raise DnncError(f"{name} {size} is outside the compiled range {r.text()}")
        return self._module(self.plan.bucket_for(wanted))

    @property
    def buckets(self) -> list[str]:
        """Every bucket compiled, like ``batch=8``, the largest first."""
        return [self.plan.label(k) for k in self.plan.buckets() if k in self.modules]

    def bind(self, *args: Any) -> Any:
        raise DnncError("bind one bucket's program: module.bucket(batch=8).bind(...) (a binding has fixed shapes)")

    def check_indices(self) -> None:
        """Every built bucket's ``check_indices``: wait for the calls made so far and
        raise if a GPU kernel met a gather index out of range in any of them."""
        for module in self.modules.values():
            module.check_indices()

    def summary(self) -> dict[str, Any]:
        """Each bucket's ``summary()``, by label."""
        return {self.plan.label(k): m.summary() for k, m in self.modules.items()}

    @property
    def memory_peak_bytes(self) -> int | None:
        """The shared arena's size: the largest of the buckets' (GPU only)."""
        peaks = [m.memory_peak_bytes for m in self.modules.values() if m.memory_peak_bytes is not None]
        return max(peaks) if peaks else None

    @property
    def input_specs(self) -> Any:
        """The largest bucket's."""
        return self._module(self.plan.buckets()[0]).input_specs

    def save(self, path: str | Path) -> Path:
        """One artifact holding every bucket (``dnnc.load`` gives this module back)."""
        from dnnc.artifact.store import save_artifact
        from dnnc.paths import check_writable

        if Path(path).suffix == ".mlir":
            raise DnncError(f"{path}: a module of several buckets is saved as an artifact (.dnnc), not as IR")
        check_writable(path)
        modules = {k: self._module(k) for k in self.plan.buckets()}  # an artifact holds every bucket
        entries = [(self.plan.label(k), m.artifact_contents()) for k, m in modules.items()]
        return save_artifact(entries[0][1], path, buckets=(self.plan.to_json(), entries))
