"""The verbs over a compiled program: ``dnnc run`` (an artifact, or IR on the
reference backend), ``dnnc bench`` and ``dnnc inspect`` (an artifact)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import torch

from dnnc import knobs
from dnnc.cli.common import console, out, user_errors
from dnnc.errors import DnncError
from dnnc.ir.program import Program
from dnnc.ir.types import describe
from dnnc.terminal import print_plain, printable


@click.command("run")
@click.argument("program_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--params",
    "params_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Parameters of an IR file (default: IR_FILE with .safetensors).",
)
@click.option(
    "--input",
    "inputs",
    multiple=True,
    metavar="SPEC",
    help="1x3xf32=0.5, 2xi64=1,2, @x.npy or 1x3xf32=random (repeatable, in order).",
)
@click.option("--output", "outputs", multiple=True, metavar="FILE.npy", help="Write output i to the i-th file.")
@click.option("--precision", type=click.Choice(["float32", "float64"]), default=None, help="Reference backend compute precision.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default=None, help="Where an artifact runs.")
@click.option(
    "--import",
    "imports",
    multiple=True,
    metavar="FILE.py|MODULE",
    help="Import your code first (repeatable): the dnnc.CustomKernel declarations whose reference functions the program's kernels name.",
)
@click.option(
    "--trust-code",
    is_flag=True,
    help="Import the modules or files the program's user kernels name as reference implementations (runs their code).",
)
@user_errors
def run_command(
    program_file: Path,
    params_file: Path | None,
    inputs: tuple[str, ...],
    outputs: tuple[str, ...],
    precision: str | None,
    device: str | None,
    imports: tuple[str, ...],
    trust_code: bool,
) -> None:
    """Run an artifact (model.dnnc) or IR (x.mlir, on the CPU reference backend),
    iree-run-module style. Runs no code the file carries or names unless --trust-code."""
    from dnnc.inputs import input_meta, parse_input, save_npy
    from dnnc.model_loader import import_user_code
    from dnnc.paths import check_writable

    for location in imports:
        import_user_code(location)
    for file in outputs:
        check_writable(file.removeprefix("@"), "--output")
    metas = [input_meta(spec) for spec in inputs]  # shapes and types, checked before anything is built

    def build() -> list[torch.Tensor]:
        return [parse_input(spec, seed=i) for i, spec in enumerate(inputs)]

    with knobs.override(reference_precision=precision) if precision else contextlib.nullcontext():
        if _is_artifact(program_file):
            if params_file is not None:
                raise DnncError(f"--params applies to IR files; artifact {program_file} holds its own parameters")
            results, types = _run_artifact(program_file, metas, build, len(outputs), device, trust_code)
        else:
            results, types = _run_ir(program_file, params_file, metas, build, len(outputs), trust_code)
    for i, (result, t) in enumerate(zip(results, types)):
        out.print(f"result[{i}]: {describe(t)}")
        out.print(_preview(result))
        if i < len(outputs):
            save_npy(result, outputs[i])


def _is_artifact(path: Path) -> bool:
    import zipfile

    return path.suffix == ".dnnc" or (path.is_file() and zipfile.is_zipfile(path))


def _check_output_count(given: int, program: Program) -> None:
    if given > len(program.output_types):
        raise DnncError(f"{given} --output files given for {len(program.output_types)} outputs")


def _run_ir(
    path: Path,
    params_file: Path | None,
    metas: list[torch.Tensor],
    build: Callable[[], list[torch.Tensor]],
    n_outputs: int,
    trust_code: bool,
) -> tuple[list, list]:
    from dnnc.backends.reference import ReferenceExecutor
    from dnnc.kernels.reference import trust_references
    from dnnc.runtime.signature import check_inputs, specs_of

    program = Program.load(path, params_file)
    if trust_code:
        trust_references(program)
    check_inputs(specs_of(program.input_types), metas)
    _check_output_count(n_outputs, program)
    return ReferenceExecutor(program, knobs.get().reference_precision).run(build()), program.output_types


def _run_artifact(
    path: Path,
    metas: list[torch.Tensor],
    build: Callable[[], list[torch.Tensor]],
    n_outputs: int,
    device: str | None,
    trust_code: bool,
) -> tuple[list, list]:
    import torch.utils._pytree as pytree

    from dnnc.bucketed import BucketedModule
    from dnnc.buckets import shape_at
    from dnnc.ir.types import tensor_type
    from dnnc.loading import load
    from dnnc.runtime.signature import check_inputs

    module = load(path, device=device, trust_code=trust_code)
    if isinstance(module, BucketedModule):
        plan = module.plan
        bucket = plan.bucket_for(plan.measure(metas))  # sizes in range, before anything is built
        console.print(f"[dim]bucket {plan.label(bucket)}[/dim]")
        sizes = dict(zip(plan.names, bucket))
        program = module.modules[bucket].program
        padded = [torch.empty(shape_at(m.shape, a, sizes), dtype=m.dtype, device="meta") for m, a in zip(metas, plan.input_axes)]
        check_inputs(module.modules[bucket].input_specs, padded)
    else:
        check_inputs(module.input_specs, metas)  # before any input is built or moved to the device
        program = module.program
    _check_output_count(n_outputs, program)
    results = pytree.tree_leaves(module(*[t.to(module.device) for t in build()]))
    if module.device == "cuda":
        console.print(f"[dim]ran on the GPU ({torch.cuda.get_device_name()}), target {module.target}[/dim]")
    return [r.cpu() for r in results], [tensor_type(tuple(r.shape), r.dtype) for r in results]


def _preview(t: torch.Tensor, count: int = 8) -> str:
    flat = t.reshape(-1)
    shown = ", ".join(f"{v:.6g}" if t.is_floating_point() else str(v) for v in flat[:count].tolist())
    more = ", ..." if flat.numel() > count else ""
    stats = f"  (min {t.min().item():.6g}, max {t.max().item():.6g})" if t.is_floating_point() and t.numel() else ""
    return f"  [{shown}{more}]{stats}"


# bench --------------------------------------------------------------------------------


@click.command("bench")
@click.argument("artifact", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default=None, help="Where the artifact runs.")
@click.option("--iterations", type=click.IntRange(min=1), default=20, show_default=True, help="Timed calls.")
@click.option("--warmup", type=click.IntRange(min=0), default=3, show_default=True, help="Untimed calls first.")
@click.option("--cuda-graph/--no-cuda-graph", default=None, help="Replay as a CUDA graph (default: knob cuda_graph).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object (every percentile, each call's time).")
@click.option(
    "--batch",
    "batches",
    default=None,
    metavar="N,N,...",
    help="Batch sizes to time, one after the other (an artifact compiled with --dynamic batch=...).",
)
@click.option("--seq", "seqs", default=None, metavar="N,N,...", help="Sequence lengths to time (--dynamic seq=...).")
@user_errors
def bench_command(
    artifact: Path,
    device: str | None,
    iterations: int,
    warmup: int,
    cuda_graph: bool | None,
    as_json: bool,
    batches: str | None,
    seqs: str | None,
) -> None:
    """Latency (p50, p90, p99), throughput and peak memory of an artifact on fresh random inputs."""
    import json

    from dnnc.loading import load
    from dnnc.runtime.bench import bench, sizes_to_time

    with console.status(f"loading {artifact}"):
        module = load(artifact, device=device, cuda_graph=cuda_graph)
    runs = sizes_to_time(module, {"batch": _sizes(batches, "--batch"), "seq": _sizes(seqs, "--seq")})
    where = f"GPU ({torch.cuda.get_device_name()})" if module.device == "cuda" else "CPU reference backend (not the GPU kernels)"
    results = []
    for label, specs in runs:
        with console.status(f"timing {iterations} calls{' at ' + label if label else ''}"):
            results.append((label, bench(module, iterations, warmup, specs)))
    if as_json:
        shown = [
            {**r.as_json(), "device": where, "times_ms": r.times_ms, **({"sizes": label} if label else {})}
            for label, r in results
        ]
        out.print_json(json.dumps(shown[0] if len(shown) == 1 and not runs[0][0] else shown))
        return
    out.print(f"backend: {where}")
    for label, result in results:
        at = f"{label}: " if label else ""
        out.print(
            f"{at}latency: p50 {result.percentile_ms(50):.3f} ms, p90 {result.percentile_ms(90):.3f} ms, "
            f"p99 {result.percentile_ms(99):.3f} ms over {result.iterations} calls"
        )
        out.print(f"{at}throughput: {result.items_per_s:.1f} items/s (batch {result.batch})")
    result = results[-1][1]
    out.print(f"peak memory: {result.peak_bytes / 1e6:.1f} MB ({result.peak_kind})")
    if module.memory_peak_bytes is not None:
        out.print(f"memory plan (arena for intermediates): {module.memory_peak_bytes / 1e6:.1f} MB")


def _sizes(text: str | None, option: str) -> list[int]:
    if text is None:
        return []
    try:
        sizes = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(f"expected sizes separated by commas, like 1,7,32; got {text!r}", param_hint=option) from None
    if not sizes or min(sizes) < 1:
        raise click.BadParameter(f"expected sizes of 1 or more, got {text!r}", param_hint=option)
    return sizes


@click.command("inspect")
@click.argument("artifact", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print everything as one JSON object.")
@user_errors
def inspect_command(artifact: Path, as_json: bool) -> None:
    """Manifest, signature, ops per backend, memory plan and decisions of an artifact."""
    import json

    from dnnc.artifact import read_artifact
    from dnnc.artifact.describe import describe as describe_artifact

    facts = describe_artifact(read_artifact(artifact))
    if as_json:
        out.print_json(json.dumps(facts), ensure_ascii=True)  # control characters as \u escapes
        return
    for line in _inspect_lines(artifact, facts):
        print_plain(out, line)


def _named(specs: list[str], names: list[str | None]) -> str:
    """``image [2, 3] float32, scale [2] float32`` (a spec alone where no name is stored)."""
    return ", ".join(spec if name is None else f"{name} {spec}" for spec, name in zip(specs, names))


def _inspect_lines(artifact: Path, facts: dict[str, Any]) -> list[str]:
    """``dnnc inspect``'s lines, every value from the file made ``printable``."""
    import json

    p = printable
    m = facts["manifest"]
    device = f" ({p(facts['device_name'])})" if facts["device_name"] else ""
    peak = facts["memory_peak_bytes"]
    lines = [
        f"artifact: {p(artifact)} (format {p(m['format'])} schema {p(m['schema'])}, dnnc {p(m['dnnc'])}, created {p(m.get('created'))})",
        f"target: {p(m['target'])}{device}",
        "versions: " + ", ".join(f"{p(k)} {p(v)}" for k, v in sorted(facts["versions"].items())),
        f"inputs: {p(_named(facts['inputs'], facts['input_names']))}",
        f"outputs: {p(_named(facts['outputs'], facts['output_names']))}",
        "ops by backend: " + ", ".join(f"{p(k)} {v}" for k, v in sorted(facts["ops_by_backend"].items())),
        f"parameters: {facts['parameters']['tensors']} tensors, {facts['parameters']['bytes'] / 1e6:.1f} MB",
        f"memory plan peak: {peak / 1e6:.1f} MB" if peak is not None else "memory plan peak: none (reference backend)",
    ]
    buckets = facts.get("buckets")
    if buckets:
        lines.append(
            f"buckets: {len(buckets['entries'])} over {p(', '.join(buckets['ranges']))} (the signature above is the largest's)"
        )
        for b in buckets["entries"]:
            ops = ", ".join(f"{p(k)} {v}" for k, v in sorted(b["ops_by_backend"].items()))
            peak_b = b["memory_peak_bytes"]
            arena = f"; memory plan peak {peak_b / 1e6:.1f} MB" if peak_b is not None else ""
            lines.append(f"  {p(b['label'])}: inputs {p(', '.join(b['inputs']))}; {ops}{arena}")
    for f in facts["fallbacks"]:
        lines.append(f"fallback: {p(f.get('backend'))} group {p(f.get('kind'))}: {p(f.get('reason'))}")
    for backend, k in facts.get("kernel_records", {}).items():
        compiled = f", {k['compiled']} stored compiled for {p(', '.join(k['targets']))}" if k["compiled"] else ""
        lines.append(f"{p(backend)} kernels: {k['records']} recorded{compiled}")
    for name, k in facts["user_kernels"].items():
        ran = f"; ran as {p(k['ran_as'])}" if k["ran_as"] else ""
        lines.append(f"user kernel {p(name)}: objects {p(', '.join(k['objects'])) or 'none'}{ran}")
    decisions = facts["decisions"]
    # JSON writes control and non-ASCII characters in strings as \u escapes
    lines.append("decisions: " + (json.dumps(decisions, indent=1) if decisions is not None else "none recorded"))
    return lines
