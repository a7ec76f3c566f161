"""Compiled groups as ``GroupKernel``s, and the choice among configs.

``launch`` only checks the tensor count, builds the TMA descriptors a kernel takes
(``tile_descriptors``) and enqueues: Triton's launcher runs on torch's current CUDA
stream, takes caller-allocated outputs and never synchronizes, so a launch can be
captured in a CUDA graph once the kernel is loaded (``compile_group`` loads it, so
capture never compiles). The only lazy paths are a tensor whose address is not
16-byte aligned, which gets a kernel compiled without alignment hints on first use,
and one TMA cannot take, which gets the config's pointer kernel.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from typing import Any

import torch
from xdsl.dialects.builtin import StringAttr

from dnnc import knobs, progress
from dnnc.backends.interface import SITE_ATTR, SPEC_CONFIG_ATTR
from dnnc.backends.triton import compiler, pingpong
from dnnc.backends.triton.configs import (
    AFTER_LIBRARY,
    LAUNCH_EARLY_ATTR,
    ONE_WAVE_FOLLOWER_PROGRAMS,
    OPTIONAL_KEYS,
    candidates,
    launch_bound_pair,
    merge_base,
    with_launch,
)
from dnnc.backends.triton.emitter import CodegenError
from dnnc.backends.triton.kernels import GroupInfo, KernelSource, generate
from dnnc.backends.triton.skeleton import INDEX_FLAG, TileDescriptor
from dnnc.cache import ContentCache, content_key, environment
from dnnc.errors import InputError
from dnnc.ir import tcp
from dnnc.ir.text import print_ir
from dnnc.ir.types import shape_of, torch_dtype
from dnnc.roofline import launch_bound
from dnnc.timing import device_time_ms

log = logging.getLogger("dnnc.triton")

_choices = ContentCache("triton-tune")


class TritonKernel:
    """One generated kernel for one group, bound to a config and a device."""

    backend = "triton"

    def __init__(self, source: KernelSource, device: torch.device, capability: int | None, config: dict[str, int] | None = None):
        self.source = source
        self.config = dict(config or {})
        """The config it was generated with (what ``dnnc tune`` writes into a spec)."""
        self.tuned_ms: float | None = None
        """Its time when it won the config timing here; None when not timed."""
        self.kind = source.kind
        self.device = device
        self.grid = source.grid
        self.index_flag: torch.Tensor | None = (
            torch.zeros(1, dtype=torch.int32, device=device) if INDEX_FLAG in source.signature else None
        )
        """Where a kernel that gathers marks an index out of range (its last argument);
        the executor may point it into a buffer it reads after each call."""
        self.scratch = tuple(torch.zeros(n, dtype=getattr(torch, dtype), device=device) for _, dtype, n in source.scratch)
        """The memory a split-K product keeps its partial tiles and counts in (zero between launches)."""
        self._n_params = source.tensors - (self.index_flag is not None)
        self._descriptors = source.descriptors
        self._fallback: TritonKernel | None = None
        self._capability = capability
        if capability is None:
            self._fn = compiler.load(source)
            self._aligned = self._unaligned = None
        else:
            self._fn = None
            self._aligned = compiler.compile_for(source, compiler.cuda_target(capability))
            self._unaligned: Any = None
            if hasattr(self._aligned, "_init_handles"):
                self._aligned._init_handles()  # load the module now, not during a CUDA graph capture

    def record(self) -> dict[str, Any]:
        return kernel_record(self.source, self.config, self._capability)

    def launch(self, inputs: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor]) -> None:
        if len(inputs) + len(outputs) != self._n_params:
            raise InputError(
                f"Triton {self.kind} kernel takes {self._n_params} tensors, got {len(inputs)} inputs and {len(outputs)} outputs"
            )
        args = (*inputs, *outputs) if self.index_flag is None else (*inputs, *outputs, self.index_flag)
        if self.scratch:
            args = (*args, *self.scratch)
        tiles: list[Any] = []
        if self._descriptors:
            found = tile_descriptors(self._descriptors, args)
            if found is None:
                self._pointer_kernel().launch(inputs, outputs)
                return
            tiles = found
        if self._fn is not None:
            self._fn[self.grid](*args, *tiles)
            return
        kernel = self._aligned
        if any(t.data_ptr() % 16 for t in args):
            if self._unaligned is None:
                self._unaligned = compiler.compile_for(self.source, compiler.cuda_target(self._capability), aligned=False)
            kernel = self._unaligned
        kernel[self.grid](*args, *tiles)

    def _pointer_kernel(self) -> TritonKernel:
        """The same config with pointer tiles, for tensors TMA cannot take (compiled on first use)."""
        if self._fallback is None:
            assert self.source.fallback is not None, "a kernel with TMA descriptors carries its pointer form"
            self._fallback = TritonKernel(self.source.fallback, self.device, self._capability, self.config)
        return self._fallback


def tile_descriptors(descriptors: Sequence[TileDescriptor], tensors: Sequence[torch.Tensor]) -> list[Any] | None:
    """A ``TensorDescriptor`` per TMA parameter over its tensor seen as a row-major
    matrix, or None where a tensor's address is not 16-byte aligned (TMA needs that;
    torch's allocations are, a view into another tensor may not be). Triton's launcher
    encodes them into the kernel's parameters at each launch, so a CUDA graph captures
    the addresses of that launch's tensors."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    tiles = []
    for d in descriptors:
        t = tensors[d.tensor]
        if t.data_ptr() % 16 or not t.is_contiguous():
            return None
        if d.gluon:
            tiles.append(pingpong.descriptor(t, d.shape, d.block))
        else:
            tiles.append(TensorDescriptor(t, list(d.shape), [d.shape[1], 1], list(d.block)))
    return tiles


def kernel_record(source: KernelSource, config: dict[str, int], capability: int | None) -> dict[str, Any]:
    """What an artifact records of a kernel: the source (compared at load, never run),
    the config it is generated again with, and the kernel compiled for
    ``sm_<capability>`` where this process compiled it (``compiler.object_of``), which a
    load on the same target, Triton and dnnc takes instead of compiling."""
    s = source
    fields = {"kind": s.kind, "name": s.name, "text": s.text, "signature": s.signature, "options": s.options}
    record = {**fields, "grid": list(s.grid), "config": dict(config)}
    stored = None if capability is None else compiler.object_of(s, capability)
    if stored is not None:
        record["object"] = {"target": f"sm_{capability}", **stored}
    return record


def records_for_target(groups: Sequence[tuple[int, tcp.IsolatedGroupOp]], capability: int) -> list[dict[str, Any]]:
    """The records of ``groups`` (each with its ordinal) built for ``sm_<capability>``
    without that GPU: each kernel generated with the config a tuning spec gave it, else
    the heuristics' first (nothing is timed), compiled for the target side by side
    (``compiler.precompile``) and stored compiled. A group that does not generate or
    compile is an error naming it: the artifact would otherwise compile it on the GPU."""
    target = compiler.cuda_target(capability)
    built = []
    for ordinal, group in groups:
        info = GroupInfo.of(group)
        config = spec_or_candidates(info, capability)[0]
        try:
            built.append((ordinal, generate(group, config, info=info), config))
        except Exception as e:
            raise CodegenError(f"Triton group {ordinal} ({info.kind}): no kernel generated for sm_{capability}: {e}") from e
    compiler.precompile([source for _, source, _ in built], target)
    records = []
    for ordinal, source, config in built:
        progress.add(kernels=1)
        try:
            compiler.compile_for(source, target)
        except Exception as e:
            raise CodegenError(f"Triton group {ordinal} ({source.kind}): triton.compile for sm_{capability} failed: {e}") from e
        records.append({"ordinal": ordinal, **kernel_record(source, config, capability)})
    return records


def _example_tensors(group: tcp.IsolatedGroupOp, device: torch.device) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Inputs for timing configs: normal floats, zero indices (always in range), random masks."""
    inputs = []
    for arg in group.body.block.args:
        dtype = torch_dtype(arg.type.element_type)
        shape = shape_of(arg)
        if dtype.is_floating_point:
            inputs.append(torch.randn(shape, device=device).to(dtype))
        elif dtype == torch.bool:
            inputs.append(torch.rand(shape, device=device) > 0.5)
        else:
            inputs.append(torch.zeros(shape, dtype=dtype, device=device))
    outputs = [torch.empty(shape_of(r), dtype=torch_dtype(r.type.element_type), device=device) for r in group.outputs]
    return inputs, outputs


def _time(kernel: TritonKernel, inputs: list[torch.Tensor], outputs: list[torch.Tensor]) -> float:
    return device_time_ms(lambda: kernel.launch(inputs, outputs))


def _timed(kernel: TritonKernel, inputs: list[torch.Tensor], outputs: list[torch.Tensor], rank: int, ms: float) -> dict[str, Any]:
    """One config's timing as a debug record carries it (``bench/tuning_times.py`` reads
    them): the kernel's kind, its tensors' shapes, the config, its rank among the
    heuristics' configs and the time."""
    shapes = [list(t.shape) for t in (*inputs, *outputs)]
    return {"backend": "triton", "kind": kernel.kind, "shapes": shapes, "config": kernel.config, "rank": rank, "ms": ms}


def compile_group(group: tcp.IsolatedGroupOp, device: torch.device | str) -> TritonKernel:
    """A ``GroupKernel`` (``backend = "triton"``) computing ``group`` on ``device``.

    On CUDA the kernel is compiled for the device's compute capability; with
    ``knobs.autotune`` the configs ``configs_to_time`` picks are timed once (the
    choice is cached by the group's text, the configs, the device and the Triton
    version) and the fastest kept, else the first. Under ``TRITON_INTERPRET=1`` it
    runs on CPU tensors with the first config.
    """
    device = torch.device(device)
    info = GroupInfo.of(group)
    if compiler.interpreting():
        config = spec_or_candidates(info)[0]
        return TritonKernel(generate(group, config, interpret=True), device, None, config)
    if device.type != "cuda":
        raise CodegenError(f"Triton kernels run on CUDA devices (or on the CPU under TRITON_INTERPRET=1), not on {device}")
    capability = capability_of(device)
    configs = configs_to_time(group, info, device)
    if len(configs) == 1:
        return TritonKernel(generate(group, configs[0], info=info), device, capability, configs[0])
    key = _choice_key(group, device, configs, info)
    chosen = _known_choice(key, configs)
    if chosen is not None:
        return TritonKernel(generate(group, configs[chosen], info=info), device, capability, configs[chosen])
    sources = [_generated(group, config, info) for config in configs]
    compiler.precompile([s for s in sources if s is not None], compiler.cuda_target(capability))
    progress.tally("triton autotune", len(configs))
    inputs, outputs = _example_tensors(group, device)
    best: tuple[float, int, TritonKernel] | None = None
    failures = []
    with torch.cuda.device(device):
        for i, (config, source) in enumerate(zip(configs, sources)):
            try:
                kernel = TritonKernel(source or generate(group, config, info=info), device, capability, config)
                elapsed = _time(kernel, inputs, outputs)
                log.debug("triton: %s config timed", info.kind, extra={"timed": _timed(kernel, inputs, outputs, i, elapsed)})
            except Exception as e:
                failures.append(f"{config}: {e}")
                continue
            if best is None or elapsed < best[0]:
                best = (elapsed, i, kernel)
    if best is None:
        raise CodegenError(f"no Triton config of this {info.kind} group compiled:\n" + "\n".join(failures))
    _choices.put_json(key, best[1])
    best[2].tuned_ms = best[0]
    return best[2]


def configs_to_time(group: tcp.IsolatedGroupOp, info: GroupInfo, device: torch.device) -> list[dict[str, int]]:
    """The configs autotuning times for ``group``, best guess first: all of them, but
    for a launch-bound group (``roofline.launch_bound``) only the first and the most
    parallel (``configs.launch_bound_pair``: on mobilenetv2 and ghostnet at 64x64,
    batch 2, on an H200, the faster of those two was within 1.1% of the best of all
    in summed kernel time, at 290 of 609 configs timed, where the first alone was 9%
    slower); the first alone without autotuning."""
    configs = spec_or_candidates(info, capability_of(device))
    if len(configs) == 1 or not knobs.get().autotune:
        return configs[:1]
    if launch_bound(group, device):
        return launch_bound_pair(configs)
    return configs


def spec_or_candidates(info: GroupInfo, capability: int | None = None) -> list[dict[str, int]]:
    """The configs to try: the one a tuning spec put on an op of the group (over
    ``configs.merge_base``, so every key the kind needs is there and a spec's record
    means what it meant where it was tuned), else the heuristics' for ``sm_<capability>``.
    A kernel of two summed convolutions takes the heuristics' too: a record is tuned for a
    convolution alone, and may name TMA tiles or a split K that such a kernel has not.
    Each is launched as ``configs.with_launch`` says for that GPU and the group's place
    in the program (``launch_order``)."""
    chosen = [op.attributes[SPEC_CONFIG_ATTR] for op in info.ops if SPEC_CONFIG_ATTR in op.attributes]
    if not chosen or info.summed is not None:
        return [_launched(info, c, capability) for c in candidates(info, capability)]
    base = merge_base(info)
    spec = json.loads(chosen[0].data)  # type: ignore[attr-defined]
    unknown = sorted(set(spec) - set(base) - set(OPTIONAL_KEYS))
    if unknown:
        raise CodegenError(
            f"a tuning spec gives {', '.join(unknown)} to a Triton {info.kind} kernel, which takes {', '.join(base)}"
        )
    return [_launched(info, {**base, **spec}, capability)]


def _launched(info: GroupInfo, config: dict[str, int], capability: int | None) -> dict[str, int]:
    """``config`` with the launch its group's mark allows (``launch_order``): behind a
    cuDNN matrix product, PDL only where the kernel has at most
    ``ONE_WAVE_FOLLOWER_PROGRAMS`` programs (its grid is known once its source is
    generated, a string emitted)."""
    mark = info.group.attributes.get(LAUNCH_EARLY_ATTR)
    launched = with_launch(config, capability, mark is not None)
    behind_library = isinstance(mark, StringAttr) and mark.data == AFTER_LIBRARY
    if "PDL" in launched and behind_library and not _fits_one_wave(info, launched):
        return with_launch(config, capability, False)
    return launched


def _fits_one_wave(info: GroupInfo, config: dict[str, int]) -> bool:
    return math.prod(generate(info.group, config, info=info).grid) <= ONE_WAVE_FOLLOWER_PROGRAMS


def capability_of(device: torch.device) -> int:
    """The compute capability of ``device`` as one number (90 for sm_90)."""
    major, minor = torch.cuda.get_device_capability(device)
    return major * 10 + minor


def precompile_groups(groups: Sequence[tcp.IsolatedGroupOp], device: torch.device | str) -> int:
    """Compile, side by side in worker processes, every kernel ``compile_group`` would
    compile for ``groups`` (each config it will time, ``configs_to_time``),
    so building many groups one after another (the partitioner's candidates) loads
    them from the cache. Returns how many were compiled."""
    device = torch.device(device)
    if compiler.interpreting() or device.type != "cuda":
        return 0
    sources: list[KernelSource | None] = []
    for group in groups:
        info = GroupInfo.of(group)
        configs = configs_to_time(group, info, device)
        if len(configs) == 1:
            sources.append(_generated(group, configs[0], info))
            continue
        chosen = _known_choice(_choice_key(group, device, configs, info), configs)
        picked = configs if chosen is None else [configs[chosen]]
        sources += [_generated(group, config, info) for config in picked]
    return compiler.precompile([s for s in sources if s is not None], compiler.cuda_target(capability_of(device)))


def _choice_key(group: tcp.IsolatedGroupOp, device: torch.device, configs: list[dict[str, int]], info: GroupInfo) -> str:
    return content_key({**environment(device), "group": _unmarked_text(group, info), "configs": configs})


def _unmarked_text(group: tcp.IsolatedGroupOp, info: GroupInfo) -> str:
    """The group's text without the tuning-site marks (the same kernel at two sites
    shares one config choice)."""
    if not any(SITE_ATTR in op.attributes for op in group.body.block.ops):
        return info.text()
    copy = group.clone()
    for op in copy.body.block.ops:
        op.attributes.pop(SITE_ATTR, None)
    return print_ir(copy)


def _known_choice(key: str, configs: list[dict[str, int]]) -> int | None:
    chosen = _choices.get_json(key)
    return chosen if isinstance(chosen, int) and 0 <= chosen < len(configs) else None


def _generated(group: tcp.IsolatedGroupOp, config: dict[str, int], info: GroupInfo) -> KernelSource | None:
    """The source for one config, or None when it cannot be generated (the timing
    loop generates it again and records why)."""
    try:
        return generate(group, config, info=info)
    except Exception:
        return None
