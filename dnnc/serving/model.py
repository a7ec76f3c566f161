"""An artifact as a served model: its signature in protocol terms, each request
checked on its own, and requests gathered into calls and split back.

Requests are gathered along the batch (dimension 0 of every input) into the
artifact's buckets: those whose other dimensions agree are concatenated up to the
largest bucket and run as one call, and each output is split back by rows. A row is
computed apart from the others in the call, so each request gets what it would
alone; if a gathered call fails, its requests run one at a time, so only the one
that fails gets an error. An artifact of one shape, or one whose outputs have no
batch dimension, runs each request alone.

No serving engine here: ``deployment`` puts this behind one.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.utils._pytree as pytree

from dnnc.buckets import shape_problem
from dnnc.errors import DnncError
from dnnc.serving.protocol import InferRequest, ProtocolError, datatype_of


@dataclass
class Stats:
    """Counts and times as Triton's statistics extension reports them (nanoseconds)."""

    requests: int = 0
    failures: int = 0
    executions: int = 0
    rows: int = 0
    queue_ns: int = 0
    compute_ns: int = 0
    batch_sizes: dict[int, int] = field(default_factory=dict)
    """Requests per executed call -> how many calls gathered that many."""

    def as_json(self, model: str) -> dict[str, Any]:
        return {
            "model_stats": [
                {
                    "name": model,
                    "version": "1",
                    "inference_count": self.rows,
                    "execution_count": self.executions,
                    "inference_stats": {
                        "success": {"count": self.requests - self.failures, "ns": self.queue_ns + self.compute_ns},
                        "fail": {"count": self.failures, "ns": 0},
                        "queue": {"count": self.requests, "ns": self.queue_ns},
                        "compute_infer": {"count": self.requests, "ns": self.compute_ns},
                    },
                    "batch_stats": [
                        {"batch_size": k, "compute_infer": {"count": v}} for k, v in sorted(self.batch_sizes.items())
                    ],
                }
            ]
        }


@dataclass
class Pending:
    """One checked request waiting to run: its inputs (on the CPU until ``run``) and when it arrived."""

    inputs: list[torch.Tensor]
    arrived_ns: int
    rows: int


class ServedModel:
    """A compiled module (``dnnc.load`` of an artifact: ``load``) with what serving
    needs to check and gather requests: its tensors' names and specs, and its
    ``plan`` where it has buckets."""

    def __init__(
        self,
        module: Any,
        name: str,
        input_names: Sequence[str],
        output_names: Sequence[str],
        input_specs: Sequence[Any],
        output_specs: Sequence[Any],
    ):
        self.module = module
        self.name = name
        self.input_names, self.output_names = list(input_names), list(output_names)
        self.input_specs, self.output_specs = list(input_specs), list(output_specs)
        for spec in [*self.input_specs, *self.output_specs]:
            datatype_of(spec.dtype)  # every tensor has a protocol datatype
        self.plan = getattr(module, "plan", None)
        self.max_rows = 1
        self.gathers = False
        if self.plan is not None and "batch" in self.plan.names:
            self.max_rows = self.plan.ranges["batch"].high
            self.gathers = len(self.plan.output_axes) == len(self.output_names) and all(
                "batch" in axes for axes in self.plan.output_axes
            )
        self.stats = Stats()
        self.staging = Staging(module.device, self.input_specs)

    @classmethod
    def load(cls, path: str | Path, device: str | None = None, name: str | None = None) -> ServedModel:
        """The artifact at ``path``, loaded (no code it carries or names is run)."""
        import dnnc
        from dnnc.artifact.store import read_manifest

        path = Path(path)
        manifest = read_manifest(path)
        return cls(
            dnnc.load(path, device=device),
            name or path.stem,
            [n or f"input_{i}" for i, n in enumerate(manifest.names("inputs"))],
            [n or f"output_{i}" for i, n in enumerate(manifest.names("outputs"))],
            manifest.inputs,
            manifest.outputs,
        )

    def _dynamic(self, index: int) -> dict[int, str]:
        """Input ``index``'s dimensions that vary: axis -> dimension name."""
        if self.plan is None:
            return {}
        return {axis: name for name, axis in self.plan.input_axes[index].items()}

    def metadata(self) -> dict[str, Any]:
        """The v2 model metadata: each tensor's name, datatype and shape (-1 where it varies)."""

        def shown(spec: Any, dynamic: dict[int, str]) -> list[int]:
            return [-1 if axis in dynamic else d for axis, d in enumerate(spec.shape)]

        out_axes = self.plan.output_axes if self.plan is not None else []
        return {
            "name": self.name,
            "versions": ["1"],
            "platform": "dnnc",
            "inputs": [
                {"name": n, "datatype": datatype_of(s.dtype), "shape": shown(s, self._dynamic(i))}
                for i, (n, s) in enumerate(zip(self.input_names, self.input_specs))
            ],
            "outputs": [
                {
                    "name": n,
                    "datatype": datatype_of(s.dtype),
                    "shape": shown(s, {a: d for d, a in out_axes[i].items()} if i < len(out_axes) else {}),
                }
                for i, (n, s) in enumerate(zip(self.output_names, self.output_specs))
            ],
            "parameters": {"max_batch": self.max_rows, "gathers_requests": self.gathers},
        }

    def check(self, request: InferRequest) -> Pending:
        """The request's inputs in the artifact's order (on the CPU: ``run`` moves them),
        or a ``ProtocolError`` naming what does not fit."""
        arrived = time.perf_counter_ns()
        given = set(request.inputs)
        if given != set(self.input_names):
            raise ProtocolError(
                f"model {self.name!r} takes inputs {', '.join(self.input_names)}; the request has {', '.join(sorted(given))}"
            )
        tensors = []
        for i, (name, spec) in enumerate(zip(self.input_names, self.input_specs)):
            array = request.inputs[name]
            axes = self.plan.input_axes[i] if self.plan is not None else {}
            problem = shape_problem(f"input {name!r}", array.shape, spec.shape, axes)
            if problem is not None:
                raise ProtocolError(problem)
            if datatype_of(array.dtype) != datatype_of(spec.dtype):
                raise ProtocolError(
                    f"input {name!r}: expected datatype {datatype_of(spec.dtype)}, got {datatype_of(array.dtype)}"
                )
            tensors.append(torch.from_numpy(np.ascontiguousarray(array)))
        if self.plan is not None:
            try:
                self.plan.measure(tensors)
            except DnncError as e:
                raise ProtocolError(str(e)) from None
        rows = tensors[0].shape[0] if tensors and tensors[0].dim() else 1
        return Pending(tensors, arrived, rows)  # staged onto the device by ``run``, on the model's thread

    def run(self, pending: Sequence[Pending]) -> list[dict[str, np.ndarray] | ProtocolError]:
        """Every request's outputs (or its error), gathering those that can share a call.
        All of the model's GPU work, the inputs' copies included, happens in here: a
        caller runs it on one thread, since a CUDA graph being captured forbids other
        threads' work on the GPU."""
        started = time.perf_counter_ns()
        results: list[dict[str, np.ndarray] | ProtocolError | None] = [None] * len(pending)
        for group in self._gathered(pending):
            self._run_group([pending[i] for i in group], group, results)
        done = time.perf_counter_ns()
        stats = self.stats
        for p, result in zip(pending, results):
            stats.requests += 1
            stats.rows += p.rows
            stats.failures += isinstance(result, ProtocolError)
            stats.queue_ns += max(started - p.arrived_ns, 0)
            stats.compute_ns += done - started
        return results  # type: ignore[return-value]

    def _gathered(self, pending: Sequence[Pending]) -> list[list[int]]:
        """Indices of requests that run as one call: same non-batch sizes, rows up to the largest bucket."""
        if not self.gathers:
            return [[i] for i in range(len(pending))]
        groups: dict[tuple, list[list[int]]] = {}
        for i, p in enumerate(pending):
            key = tuple(tuple(t.shape[1:]) for t in p.inputs)
            chunks = groups.setdefault(key, [[]])
            if chunks[-1] and sum(pending[j].rows for j in chunks[-1]) + p.rows > self.max_rows:
                chunks.append([])
            chunks[-1].append(i)
        return [chunk for chunks in groups.values() for chunk in chunks]

    def _run_group(self, group: list[Pending], where: list[int], results: list[Any]) -> None:
        self.stats.executions += 1
        self.stats.batch_sizes[len(group)] = self.stats.batch_sizes.get(len(group), 0) + 1
        try:
            outputs = self._call(self.staging.stage([p.inputs for p in group]))
        except Exception as e:  # the call failed: alone, each request fails or succeeds by itself
            if len(group) == 1:
                results[where[0]] = ProtocolError(f"model {self.name!r} failed on this request: {type(e).__name__}: {e}")
                return
            for p, i in zip(group, where):
                self._run_group([p], [i], results)
            return
        if len(group) == 1:
            results[where[0]] = outputs
            return
        start = 0
        axes = self.plan.output_axes  # type: ignore[union-attr]
        for p, i in zip(group, where):
            results[i] = {
                n: o.take(range(start, start + p.rows), axis=axes[k]["batch"]) for k, (n, o) in enumerate(outputs.items())
            }
            start += p.rows

    def _call(self, inputs: list[torch.Tensor]) -> dict[str, np.ndarray]:
        with torch.inference_mode():
            out = self.module(*inputs)
        check = getattr(self.module, "check_indices", None)
        if check is not None:  # a GPU kernel's out-of-range index is this call's error, not a later request's
            check()
        leaves = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
        return {n: t.detach().cpu().numpy() for n, t in zip(self.output_names, leaves)}

    def _warm_up_sizes(self) -> list[dict[str, int]]:
        """Every bucket's sizes, and for each bucket the sizes one below it where
        those run on it padded: a padded call reads the bucket's padding buffers, a
        placement of its own for the runtime's graphs."""
        assert self.plan is not None
        sizes = []
        for key in self.plan.buckets():
            sizes.append(dict(zip(self.plan.names, key)))
            below = tuple(s - 1 for s in key)
            if all(self.plan.ranges[n].low <= s for n, s in zip(self.plan.names, below)) and self.plan.bucket_for(below) == key:
                sizes.append(dict(zip(self.plan.names, below)))
        return sizes

    def warm_up(self) -> None:
        """Calls on zeros (of every bucket, exact and padded, on a bucketed module),
        so no request pays for a capture: what readiness waits for."""
        from dnnc.buckets import resized

        zeros = [torch.zeros(s.shape, dtype=s.dtype) for s in self.input_specs]
        calls = (
            [zeros]
            if self.plan is None
            else [[resized(z, a, sizes) for z, a in zip(zeros, self.plan.input_axes)] for sizes in self._warm_up_sizes()]
        )
        for inputs in calls:
            for _ in range(3):  # the graphs on static copies, then on the staging buffers' own memory
                self._call(self.staging.stage([inputs]))


class Staging:
    """Where requests' inputs are gathered on their way to the device: per input, one
    page-locked host buffer and one device buffer, each as large as the largest call
    seen (the largest bucket's input, from the start), reused by every call.

    Every call of a given size then hands the model the same device memory, so the
    runtime replays the CUDA graph it captured on that memory, with no copy into
    graph buffers and no new capture; tensors allocated per request come back at a
    few alternating addresses, which would have the runtime capture new graphs
    again and again. The host-to-device copy is one transfer from page-locked
    memory per input. On the CPU the parts are only concatenated.
    """

    def __init__(self, device: str, specs: Sequence[Any]):
        self.device = device
        self._host: list[torch.Tensor | None] = [None] * len(specs)
        self._device: list[torch.Tensor | None] = [None] * len(specs)
        if device != "cpu":
            for i, spec in enumerate(specs):
                self._buffers(i, spec.dtype, math.prod(spec.shape))

    def _buffers(self, index: int, dtype: torch.dtype, numel: int) -> tuple[torch.Tensor, torch.Tensor]:
        host, dev = self._host[index], self._device[index]
        if host is None or dev is None or host.dtype != dtype or host.numel() < numel:
            host = torch.empty(numel, dtype=dtype, pin_memory=True)
            dev = torch.empty(numel, dtype=dtype, device=self.device)
            self._host[index], self._device[index] = host, dev
        return host, dev

    def stage(self, requests: Sequence[Sequence[torch.Tensor]]) -> list[torch.Tensor]:
        """The inputs of one call: each input's parts (one per request, on the CPU)
        concatenated along dimension 0, on the model's device. A caller reads the
        call's outputs back (a synchronization) before staging the next call."""
        staged = []
        for index, parts in enumerate(zip(*requests)):
            shape = (sum(p.shape[0] for p in parts), *parts[0].shape[1:]) if parts[0].dim() else ()
            if self.device == "cpu":
                staged.append(torch.cat(parts) if len(parts) > 1 else parts[0])
                continue
            numel = math.prod(shape)
            host, dev = self._buffers(index, parts[0].dtype, numel)
            host_view = host[:numel].view(shape)
            if len(parts) == 1:
                host_view.copy_(parts[0])
            else:
                torch.cat(parts, out=host_view)
            target = dev[:numel].view(shape)
            target.copy_(host_view, non_blocking=True)
            staged.append(target)
        return staged
