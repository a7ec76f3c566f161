"""The ``dnnc`` command: thin wrappers that parse arguments and call the API."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from functools import wraps
from pathlib import Path
from typing import Any

import click
import torch
from rich.console import Console
from rich.table import Table

from dnnc import knobs
from dnnc.errors import DnncError, PassError
from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program, params_path_for, read_ir_text
from dnnc.ir.types import describe, element_of, shape_of, torch_dtype
from dnnc.terminal import print_plain, printable

console = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)


def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Show dnnc's own errors as one clear message, without a traceback."""

    @wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except DnncError as e:
            raise click.ClickException(printable(str(e), lines=True)) from None  # messages quote files

    return run


@click.group()
@click.version_option(package_name="dnnc")
def main() -> None:
    """dnnc: compile deep-learning models for inference."""
    from dnnc.log import configure

    try:
        configure()
    except DnncError as e:  # a bad DNNC_* setting
        raise click.ClickException(str(e)) from None


# compile ------------------------------------------------------------------------------


_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


@main.command("compile")
@click.argument("model")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Artifact to write (model.dnnc), or IR when it ends in .mlir (default: FACTORY.mlir).",
)
@click.option("--arg", "factory_args", multiple=True, metavar="KEY=VALUE", help="Argument for the model factory (repeatable).")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default=None, help="Where the program will run.")
@click.option("--dtype", type=click.Choice(list(_DTYPES)), default=None, help="Cast the model and its floating inputs first.")
@click.option("--batch", type=click.IntRange(min=1), default=None, help="Shorthand for --arg batch=N.")
@click.option("--dump-dir", type=click.Path(file_okay=False, path_type=Path), help="Also write the IR of every stage here.")
@click.option(
    "--partition",
    type=click.Choice(["greedy", "auto", "cudnn-only", "triton-only"]),
    default=None,
    help="How GPU groups are chosen (default: DNNC_PARTITION, else greedy); see dnnc explain.",
)
@click.option(
    "--tuning-spec",
    "tuning_specs",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="A tuning-spec file or directory whose decisions override the partitioner's (repeatable, first wins).",
)
@click.option("--check/--no-check", default=True, show_default=True, help="Compare with PyTorch eager on fresh random inputs.")
@user_errors
def compile_command(
    model: str,
    output: Path | None,
    factory_args: tuple[str, ...],
    device: str | None,
    dtype: str | None,
    batch: int | None,
    dump_dir: Path | None,
    partition: str | None,
    tuning_specs: tuple[Path, ...],
    check: bool,
) -> None:
    """Compile MODEL (path/to/file.py:factory, package.module:factory, or a StableHLO
    file: x.mlir text, x.mlirbc bytecode or a jax.export portable artifact).

    The factory returns (model, example_inputs); the program is compiled for those
    shapes and dtypes. Writes an artifact (``-o model.dnnc``: run it with ``dnnc run``,
    ``dnnc bench``, ``dnnc.load``) or the IR and its parameters (``-o x.mlir``), and
    prints a summary of what was compiled.
    """
    import dnnc
    from dnnc.model_loader import parse_kwargs
    from dnnc.paths import check_writable

    if output is not None:
        check_writable(output)
    kwargs = parse_kwargs(factory_args) | ({"batch": batch} if batch is not None else {})
    specs = os.pathsep.join(str(p) for p in tuning_specs) or None
    settings = {k: v for k, v in {"dump_dir": dump_dir, "partition": partition, "tuning_specs": specs}.items() if v is not None}
    if Path(model).suffix in STABLEHLO_SUFFIXES:
        with knobs.override(**settings):
            _compile_stablehlo(Path(model), output, device, check)
        return
    with knobs.override(**settings):
        with console.status("loading the model"):
            started = time.perf_counter()
            module, inputs, name = _load(model, kwargs, dtype)
        console.print(f"[dim]loaded {name} in {time.perf_counter() - started:.2f} s[/dim]")
        with console.status(f"compiling {name} (export, canonicalize, lower, build kernels)"):
            compiled = dnnc.compile(module, inputs, device=device)
    output = output or Path(f"{name}.mlir")
    with console.status(f"writing {output}"):
        compiled.save(output)
    _print_summary(compiled, output)
    if check:
        with console.status("checking against PyTorch eager"):
            _check_against_eager(compiled, module, inputs)


STABLEHLO_SUFFIXES = (".mlir", ".mlirbc")
"""``dnnc compile x.mlir`` reads StableHLO (text, bytecode or a portable artifact)."""


def _compile_stablehlo(path: Path, output: Path | None, device: str | None, check: bool) -> None:
    """Import a StableHLO file, compile it; on a GPU check it against the reference backend."""
    import dnnc
    from dnnc.frontend.stablehlo import import_stablehlo

    with console.status(f"importing {path}"):
        started = time.perf_counter()
        program = import_stablehlo(path)
    console.print(f"[dim]imported {path} in {time.perf_counter() - started:.2f} s[/dim]")
    reference = Program(program.module.clone(), ParamStore(program.params))
    with console.status(f"compiling {path.name}"):
        compiled = dnnc.api.compile_program(program, device=device)
    output = output or path.with_suffix(".dnnc")
    with console.status(f"writing {output}"):
        compiled.save(output)
    _print_summary(compiled, output)
    if check:
        _check_against_reference(compiled, reference)


def _check_against_reference(compiled: Any, reference: Program) -> None:
    """Fresh random inputs through the compiled program and the reference backend."""
    from dnnc.backends.reference import ReferenceExecutor

    g = torch.Generator().manual_seed(int(time.time()))
    fresh = [_random_like(torch.empty(s.shape, dtype=s.dtype), g) for s in compiled.input_specs]
    expected = ReferenceExecutor(reference).run(fresh)
    out = compiled(*[x.to(compiled.device) for x in fresh])
    got = [t.cpu() for t in (out if isinstance(out, tuple) else (out,))]
    _report_check(got, expected, compiled.device, "the reference backend")


def _load(model: str, kwargs: dict[str, Any], dtype: str | None) -> tuple[torch.nn.Module, tuple[Any, ...], str]:
    """The model from its factory (``model_loader``), cast with its floating inputs to ``dtype``."""
    from dnnc.model_loader import load_model

    module, inputs, name = load_model(model, kwargs)
    if dtype is None:
        return module, inputs, name
    cast = tuple(x.to(_DTYPES[dtype]) if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs)
    return module.to(_DTYPES[dtype]), cast, name


def _print_summary(compiled: Any, output: Path) -> None:
    program: Program = compiled.program
    stages = Table(title="stages", title_justify="left")
    for column in ("stage", "seconds", "ops"):
        stages.add_column(column, justify="left" if column == "stage" else "right")
    for s in compiled.report.stages:
        stages.add_row(s.name, f"{s.seconds:.3f}", str(s.ops) if s.ops else "")
    ops = Table(title="ops (canonical)", title_justify="left")
    ops.add_column("op")
    ops.add_column("count", justify="right")
    for name, count in Counter(op.name for op in program.entry.body.walk()).most_common():
        ops.add_row(name, str(count))
    console.print(stages, ops)
    signature = (
        ", ".join(describe(t) for t in program.input_types) + " -> " + ", ".join(describe(t) for t in program.output_types)
    )
    console.print(f"signature: {signature}")
    console.print(f"parameters: {len(program.params)} tensors, {program.params.nbytes() / 1e6:.1f} MB")
    if compiled.device == "cuda":
        summary = compiled._executor.summary()
        steps = ", ".join(f"{n} {b}" for b, n in sorted(summary["steps"].items()))
        console.print(f"backend: GPU ({steps}; torch.cuda {torch.cuda.get_device_name()})")
        for f in summary["fallbacks"]:
            console.print(f"[yellow]fallback[/yellow]: {f['backend']} group {f['kind']}: {f['reason']}")
        for name, variant in summary["user_kernels"].items():
            console.print(f"user kernel {name}: {variant}")
    else:
        console.print(f"backend: CPU reference ({compiled.device})")
    if output.suffix == ".mlir":
        console.print(f"wrote {output} and {params_path_for(output)}")
    else:
        peak = compiled.memory_peak_bytes
        arena = f"; memory plan peak {peak / 1e6:.1f} MB" if peak is not None else ""
        console.print(f"wrote {output} ({output.stat().st_size / 1e6:.1f} MB, target {compiled.target}{arena})")


def _random_like(t: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Like ``t``; integers stay within the example's range (token ids in the vocabulary)."""
    from dnnc.inputs import random_tensor

    lo, hi = (int(t.min()), int(t.max()) + 1) if t.numel() and not t.is_floating_point() else (0, 1)
    return random_tensor(tuple(t.shape), t.dtype, generator, (lo, max(hi, lo + 1)))


def _check_against_eager(compiled: Any, module: torch.nn.Module, example: tuple[Any, ...]) -> None:
    """Fresh random inputs shaped like the examples (integers within their range);
    every output must match by ``dnnc.numerics``' rules and tolerances."""
    import torch.utils._pytree as pytree

    g = torch.Generator().manual_seed(int(time.time()))
    fresh = tuple(_random_like(x, g) if isinstance(x, torch.Tensor) else x for x in example)
    with torch.no_grad():
        expected = pytree.tree_leaves(module(*fresh))
    on_device = tuple(x.to(compiled.device) if isinstance(x, torch.Tensor) else x for x in fresh)
    got = [t.cpu() for t in pytree.tree_leaves(compiled(*on_device))]
    _report_check(got, expected, compiled.device, "PyTorch eager")


def _report_check(got: list[torch.Tensor], expected: list[torch.Tensor], device: str, against: str) -> None:
    """Print whether every output matches by ``dnnc.numerics``' rules and tolerances; fail if one does not."""
    from dnnc.numerics import GPU_TOLERANCE, TOLERANCE, mismatch, relative_error

    table = GPU_TOLERANCE if device == "cuda" else TOLERANCE  # float32 may run as TF32 on the GPU
    problems = [p for a, e in zip(got, expected, strict=True) if (p := mismatch(a, e, tolerances=table)) is not None]
    worst = max((relative_error(a, e) for a, e in zip(got, expected) if e.is_floating_point()), default=0.0)
    verdict = "[red]DIFFERS from[/red]" if problems else "[green]matches[/green]"
    shown = (torch.float32, torch.float16, torch.bfloat16)
    tolerances = ", ".join(f"{str(d).removeprefix('torch.')} {table[d]:g}" for d in shown)
    console.print(
        f"check: {verdict} {against} on fresh random inputs (largest relative error {worst:.2e}; tolerance {tolerances})"
    )
    if problems:
        raise click.ClickException(f"compiled program does not match {against}: {problems[0]}")


# explain ------------------------------------------------------------------------------


@main.command("explain")
@click.argument("model")
@click.option("--arg", "factory_args", multiple=True, metavar="KEY=VALUE", help="Argument for the model factory (repeatable).")
@click.option("--dtype", type=click.Choice(sorted(_DTYPES)), default=None, help="Cast the model and its float inputs first.")
@click.option("--policy", type=click.Choice(["auto", "cudnn-only", "triton-only"]), default="auto", show_default=True)
@click.option("--backends", default=None, help="Backends to choose among (default: those installed, e.g. cudnn,triton).")
@click.option("--alternatives/--no-alternatives", default=True, show_default=True, help="List every alternative per group.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), help="Also write the decision record here.")
@user_errors
def explain_command(
    model: str,
    factory_args: tuple[str, ...],
    dtype: str | None,
    policy: str,
    backends: str | None,
    alternatives: bool,
    json_path: Path | None,
) -> None:
    """Show which backend would run which ops of MODEL, at what cost, and why."""
    import json

    import dnnc
    from dnnc.model_loader import parse_kwargs
    from dnnc.partition.explain import explain_lines

    module, inputs, _ = _load(model, parse_kwargs(factory_args), dtype)
    chosen = tuple(b.strip() for b in backends.split(",") if b.strip()) if backends else None
    record = dnnc.explain(module.eval(), inputs, policy=policy, backends=chosen)
    for line in explain_lines(record, alternatives):
        out.print(line, markup=False, highlight=False)
    if json_path is not None:
        json_path.write_text(json.dumps(record, indent=1))
        console.print(f"wrote {json_path}")


# run ----------------------------------------------------------------------------------


# spec -------------------------------------------------------------------------------------


@main.group("spec")
def spec_group() -> None:
    """Tuning specs: check them, merge them into one library."""


def _spec_target(f: Callable[..., Any]) -> Callable[..., Any]:
    for decorate in reversed(
        [
            click.option("--arch", default=None, help="Target architecture, like sm_90 (default: the GPU here)."),
            click.option("--gpu-name", default=None, help="GPU name records' sku must be part of (default: the GPU here)."),
            click.option("--cudnn", default=None, help="cuDNN version to check version ranges against (default: installed)."),
            click.option("--triton", default=None, help="Triton version to check version ranges against (default: installed)."),
        ]
    ):
        f = decorate(f)
    return f


def _spec_libraries(paths: tuple[Path, ...]) -> list[tuple[str, Any]]:
    from dnnc.specs import load_library

    return [("user", lib) for p in paths for lib in load_library(p)]


def _spec_device(arch: str | None, gpu_name: str | None, cudnn: str | None, triton: str | None) -> Any:
    from dnnc.specs.library import local_device

    versions = {k: v for k, v in (("cudnn", cudnn), ("triton", triton)) if v}
    try:
        return local_device(arch, gpu_name, versions)
    except ValueError as e:
        raise click.UsageError(str(e)) from None


@spec_group.command("verify")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--model", default=None, help="Also try each decision where it applies in this model (see below).")
@click.option("--arg", "factory_args", multiple=True, metavar="KEY=VALUE", help="Argument for the model factory (repeatable).")
@click.option("--dtype", type=click.Choice(sorted(_DTYPES)), default=None, help="Cast the model and its float inputs first.")
@click.option(
    "--without-gpu",
    is_flag=True,
    help="With --model and no GPU here: accept decisions checked as far as lowering and code generation.",
)
@_spec_target
@user_errors
def spec_verify_command(
    paths: tuple[Path, ...],
    model: str | None,
    factory_args: tuple[str, ...],
    dtype: str | None,
    without_gpu: bool,
    arch: str | None,
    gpu_name: str | None,
    cudnn: str | None,
    triton: str | None,
) -> None:
    """Check tuning specs (files or directories, highest precedence first): schema,
    every field, which records apply to the target, version ranges, overlaps.

    With --model, the model is also partitioned with these specs (auto, nothing
    measured, for the target named or found here) and lowered as a compile would, and
    each group a record decided is tried: on a GPU its cuDNN engine and knobs must build
    for that graph; a Triton config must suit its kernel and generate (and compile on a
    GPU). Fails if one cannot be carried out, and, without a GPU here, unless
    --without-gpu accepts checks that stop before building engines and compiling."""
    from dnnc.specs import resolve
    from dnnc.specs.merge import overlaps

    libraries = _spec_libraries(paths)
    for _, lib in libraries:
        click.echo(f"{lib.path}: {len(lib.records)} records, mode {lib.mode}" + (f", layer {lib.layer}" if lib.layer else ""))
    device = _spec_device(arch, gpu_name, cudnn, triton)
    resolved = resolve(libraries, device, unknown_versions="keep")
    for warning in resolved.warnings:
        click.echo(f"warning: {warning}")
    for overlap in overlaps(resolved.records):
        click.echo(overlap.text())
    click.echo(
        f"{len(resolved.records)} records apply to {device.arch} ({device.name or 'any GPU'}), {len(resolved.other_target)} are for other targets"
    )
    if resolved.unchecked:
        click.echo(_unchecked_text(resolved.unchecked))
        raise click.ClickException("version ranges were not checked: name the versions to verify against")
    if model is None:
        return
    from dnnc.model_loader import parse_kwargs
    from dnnc.partition.spec_apply import only_specs, specs_for
    from dnnc.pipeline import to_canonical_tcp
    from dnnc.tuning.legality import check_decisions

    module, inputs, name = _load(model, parse_kwargs(factory_args), dtype)
    program = to_canonical_tcp(module.eval(), inputs)
    only_these = only_specs(os.pathsep.join(str(p) for p in paths))
    # partitioned as a compile on the target would be (its versions), nothing timed
    with knobs.override(measure=False, **only_these), specs_for(device):
        verdicts = check_decisions(program, torch.cuda.is_available())
    for v in verdicts:
        click.echo(v.text())
    failed = [v for v in verdicts if not v.ok]
    partial = sum(v.ok and v.on_gpu_only for v in verdicts)
    unchecked = f" ({partial} checked without building their engine or compiling their kernel: no GPU here)" if partial else ""
    click.echo(f"{name}: {len(verdicts) - len(failed)} of {len(verdicts)} decisions can be carried out{unchecked}")
    if failed:
        raise click.ClickException(f"{len(failed)} decisions cannot be carried out for {name}")
    if partial and not without_gpu:
        raise click.ClickException(
            f"{partial} decisions were not fully checked (no GPU here): run on the target GPU, or accept with --without-gpu"
        )


def _unchecked_text(unchecked: Mapping[str, Sequence[Any]]) -> str:
    """Which records' version ranges could not be checked, and the option that would."""
    parts = [
        f"{len(records)} records need {lib}, whose version is not known here (--{lib} VERSION)"
        for lib, records in unchecked.items()
    ]
    return "not checked: " + "; ".join(parts)


@spec_group.command("merge")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True, help="The merged library.")
@_spec_target
@user_errors
def spec_merge_command(
    paths: tuple[Path, ...], output: Path, arch: str | None, gpu_name: str | None, cudnn: str | None, triton: str | None
) -> None:
    """Merge tuning specs (highest precedence first) into one library for the target,
    reporting overlapping and conflicting matchers."""
    from dnnc.specs import parse_library, resolve
    from dnnc.specs.merge import overlaps, to_toml

    resolved = resolve(_spec_libraries(paths), _spec_device(arch, gpu_name, cudnn, triton), unknown_versions="keep")
    for warning in resolved.warnings:
        click.echo(f"warning: {warning}")
    if resolved.unchecked:
        click.echo(_unchecked_text(resolved.unchecked) + "; they are kept")
    found = overlaps(resolved.records)
    for overlap in found:
        click.echo(overlap.text())
    text = to_toml(resolved.records)
    parse_library(text, str(output))  # what is written reads back
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    conflicts = sum(o.conflict for o in found)
    click.echo(
        f"wrote {output}: {len(resolved.records)} records, {conflicts} conflicts, {len(found) - conflicts} redundant overlaps"
    )


@spec_group.command("show")
@click.argument("model")
@click.option(
    "--tuning-spec",
    "paths",
    multiple=True,
    required=True,
    type=click.Path(path_type=Path),
    help="A spec file or directory (repeatable, highest precedence first).",
)
@click.option("--arg", "factory_args", multiple=True, metavar="KEY=VALUE", help="Argument for the model factory (repeatable).")
@click.option("--dtype", type=click.Choice(sorted(_DTYPES)), default=None, help="Cast the model and its float inputs first.")
@click.option("--strict", is_flag=True, help="Fail when a group matches no record.")
@_spec_target
@user_errors
def spec_show_command(
    model: str,
    paths: tuple[Path, ...],
    factory_args: tuple[str, ...],
    dtype: str | None,
    strict: bool,
    arch: str | None,
    gpu_name: str | None,
    cudnn: str | None,
    triton: str | None,
) -> None:
    """Which record applies to each group of MODEL, and which records are shadowed
    (they match, but an earlier record always wins) or unused (they match nothing)."""
    from dnnc.model_loader import parse_kwargs
    from dnnc.partition.spec_facts import first_match, sites
    from dnnc.pipeline import to_canonical_tcp
    from dnnc.specs import resolve
    from dnnc.specs.library import record_label

    module, inputs, _ = _load(model, parse_kwargs(factory_args), dtype)
    resolved = resolve(_spec_libraries(paths), _spec_device(arch, gpu_name, cudnn, triton))
    for warning in resolved.warnings:
        click.echo(f"warning: {warning}")
    program = to_canonical_tcp(module.eval(), inputs)
    won: set[int] = set()
    matched: set[int] = set()
    unmatched = []
    for site in sites(program):
        facts = site.facts
        for r in resolved.records:
            if any(r.matcher.matches(f) for f in facts):
                matched.add(id(r))
        found = first_match(resolved.records, site.prefixes)
        if found is None:
            unmatched.append(site)
            click.echo(f"{site.label:28s} no record (cost model decides)")
            continue
        record, group = found
        won.add(id(record))
        click.echo(f"{site.label:28s} {group.kind} -> {record.decision.describe()}  ({record.source}, {record_label(record)})")
    for r in resolved.records:
        if id(r) not in matched:
            click.echo(f"unused: {r.source} ({record_label(r)}) matches no group of this model")
        elif id(r) not in won:
            click.echo(f"shadowed: {r.source} ({record_label(r)}) matches, but an earlier record always wins")
    if strict and unmatched:
        raise click.ClickException(f"--strict: {len(unmatched)} groups match no record: {', '.join(s.label for s in unmatched)}")


@main.command("tune")
@click.argument("model")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True, help="The spec to write (TOML).")
@click.option("--arg", "factory_args", multiple=True, metavar="KEY=VALUE", help="Argument for the model factory (repeatable).")
@click.option("--dtype", type=click.Choice(sorted(_DTYPES)), default=None, help="Cast the model and its float inputs first.")
@click.option("--batch", type=click.IntRange(min=1), default=None, help="Shorthand for --arg batch=N.")
@click.option("--sku", is_flag=True, help="Target this GPU model (its name), not only its architecture.")
@click.option(
    "--check/--no-check",
    default=True,
    show_default=True,
    help="Compile again with only the spec on a fresh cache, compare the decisions and time both programs.",
)
@user_errors
def tune_command(
    model: str, output: Path, factory_args: tuple[str, ...], dtype: str | None, batch: int | None, sku: bool, check: bool
) -> None:
    """Measure MODEL's groups on this GPU (partition ``auto``, plans and configs tuned)
    and write what won at each cuDNN-rootable group as a tuning spec, with provenance.
    A warm cache makes a second run fast. Apply it with ``dnnc compile --tuning-spec``."""
    import tempfile

    from dnnc.model_loader import parse_kwargs
    from dnnc.runtime.bench import bench
    from dnnc.tuning import tune as tuning

    kwargs = parse_kwargs(factory_args) | ({"batch": batch} if batch is not None else {})
    module, inputs, name = _load(model, kwargs, dtype)
    module = module.eval()
    with console.status(f"tuning {name} on the GPU (partition auto, measured)"):
        run = tuning.tune(module, inputs, sku=sku)
    tuned = run.tuned
    output.write_text(tuning.spec_text(tuned, name, run.device.name))
    console.print(
        f"tuned {name} on {run.device.name} in {run.seconds:.1f} s: {tuned.sites} sites, "
        f"{len(tuned.records)} records written to {output}"
    )
    for line in tuned.conflicts + tuned.skipped:
        console.print(f"[yellow]note[/yellow]: {line}")
    if not check:
        return
    with tempfile.TemporaryDirectory(prefix="dnnc-tune-check-") as fresh, console.status("compiling with the spec alone"):
        applied, seconds = tuning.reproduce(module, inputs, str(output), Path(fresh))
        decisions = applied.program.metadata.get("decisions") or {}
        groups = tuning.compare_groups(run.compiled.program.metadata.get("decisions") or {}, decisions)
        differences = tuning.decision_differences(tuning.sites_of(run.compiled), tuning.sites_of(applied))
        times = {label: bench(c, iterations=100).median_ms for label, c in (("tuned", run.compiled), ("with the spec", applied))}
    measured = decisions.get("measured")
    console.print(
        f"with the spec on a fresh cache: compiled in {seconds:.1f} s ({'measured' if measured else 'nothing measured'}), "
        + ", ".join(f"{label} {ms:.4f} ms" for label, ms in times.items())
    )
    for line in differences:
        console.print(f"[yellow]differs[/yellow]: {line}")
    if not groups.same:
        what = (
            "the same groups at swapped, identical sites"
            if groups.swapped
            else "chosen by estimate where the spec fixes nothing (the extent of a Triton group, ops no record speaks of)"
        )
        console.print(f"[yellow]note[/yellow]: {len(groups.lines())} groups differ: {what}")
        for line in groups.lines():
            console.print(f"  {line}")
    if differences:
        raise click.ClickException(f"the spec does not reproduce {len(differences)} of the tuned site decisions")
    if groups.same:
        console.print(f"the spec reproduces every tuned decision ({len(decisions.get('groups', []))} groups)")
    else:
        console.print(f"the spec reproduces every decision at its {len(run.tuned.records)} records' sites")


@main.command("run")
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

    import dnnc
    from dnnc.runtime.signature import check_inputs

    module = dnnc.load(path, device=device, trust_code=trust_code)
    check_inputs(module.input_specs, metas)  # before any input is built or moved to the device
    _check_output_count(n_outputs, module.program)
    results = pytree.tree_leaves(module(*[t.to(module.device) for t in build()]))
    if module.device == "cuda":
        console.print(f"[dim]ran on the GPU ({torch.cuda.get_device_name()}), target {module.target}[/dim]")
    return [r.cpu() for r in results], module.program.output_types


def _preview(t: torch.Tensor, count: int = 8) -> str:
    flat = t.reshape(-1)
    shown = ", ".join(f"{v:.6g}" if t.is_floating_point() else str(v) for v in flat[:count].tolist())
    more = ", ..." if flat.numel() > count else ""
    stats = f"  (min {t.min().item():.6g}, max {t.max().item():.6g})" if t.is_floating_point() and t.numel() else ""
    return f"  [{shown}{more}]{stats}"


# bench --------------------------------------------------------------------------------


@main.command("bench")
@click.argument("artifact", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default=None, help="Where the artifact runs.")
@click.option("--iterations", type=click.IntRange(min=1), default=20, show_default=True, help="Timed calls.")
@click.option("--warmup", type=click.IntRange(min=0), default=3, show_default=True, help="Untimed calls first.")
@click.option("--cuda-graph/--no-cuda-graph", default=None, help="Replay as a CUDA graph (default: knob cuda_graph).")
@user_errors
def bench_command(artifact: Path, device: str | None, iterations: int, warmup: int, cuda_graph: bool | None) -> None:
    """Median latency, throughput and peak memory of an artifact on fresh random inputs."""
    import dnnc
    from dnnc.runtime.bench import bench

    with console.status(f"loading {artifact}"):
        module = dnnc.load(artifact, device=device, cuda_graph=cuda_graph)
    with console.status(f"timing {iterations} calls"):
        result = bench(module, iterations, warmup)
    where = f"GPU ({torch.cuda.get_device_name()})" if module.device == "cuda" else "CPU reference backend (not the GPU kernels)"
    out.print(f"backend: {where}")
    out.print(f"median latency: {result.median_ms:.3f} ms over {result.iterations} calls")
    out.print(f"throughput: {result.items_per_s:.1f} items/s (batch {result.batch})")
    out.print(f"peak memory: {result.peak_bytes / 1e6:.1f} MB ({result.peak_kind})")
    if module.memory_peak_bytes is not None:
        out.print(f"memory plan (arena for intermediates): {module.memory_peak_bytes / 1e6:.1f} MB")


# inspect ------------------------------------------------------------------------------


@main.command("inspect")
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
        f"inputs: {p(', '.join(facts['inputs']))}",
        f"outputs: {p(', '.join(facts['outputs']))}",
        "ops by backend: " + ", ".join(f"{p(k)} {v}" for k, v in sorted(facts["ops_by_backend"].items())),
        f"parameters: {facts['parameters']['tensors']} tensors, {facts['parameters']['bytes'] / 1e6:.1f} MB",
        f"memory plan peak: {peak / 1e6:.1f} MB" if peak is not None else "memory plan peak: none (reference backend)",
    ]
    for f in facts["fallbacks"]:
        lines.append(f"fallback: {p(f.get('backend'))} group {p(f.get('kind'))}: {p(f.get('reason'))}")
    for name, k in facts["user_kernels"].items():
        ran = f"; ran as {p(k['ran_as'])}" if k["ran_as"] else ""
        lines.append(f"user kernel {p(name)}: objects {p(', '.join(k['objects'])) or 'none'}{ran}")
    decisions = facts["decisions"]
    # JSON writes control and non-ASCII characters in strings as \u escapes
    lines.append("decisions: " + (json.dumps(decisions, indent=1) if decisions is not None else "none recorded"))
    return lines


# opt ----------------------------------------------------------------------------------


@main.command("opt")
@click.argument("input_file", default="-", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("-p", "--passes", "pipeline", default="", help="Comma-separated passes, e.g. fold-batchnorm,dce.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), default="-", help="Output IR (default stdout).")
@click.option(
    "--params",
    "params_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Parameter values, for passes that need them.",
)
@click.option("--params-out", type=click.Path(dir_okay=False, path_type=Path), help="Write the parameters after the passes here.")
@click.option("--random-params", is_flag=True, help="Give parameters without a stored value random values (for testing passes).")
@click.option("--verify-each/--no-verify-each", default=True, show_default=True, help="Verify the IR after every pass.")
@user_errors
def opt_command(
    input_file: str,
    pipeline: str,
    output: str,
    params_file: Path | None,
    params_out: Path | None,
    random_params: bool,
    verify_each: bool,
) -> None:
    """Run passes over textual IR (like mlir-opt): read, transform, print."""
    from dnnc.ir.text import parse_ir, print_ir
    from dnnc.passes import ParamPass, parse_passes, run_passes

    if input_file == "-":
        try:
            text, source = sys.stdin.read(), "<stdin>"
        except UnicodeDecodeError as e:
            raise DnncError(f"the IR on standard input is not UTF-8 text (offset {e.start})") from None
    else:
        path = Path(input_file)
        text, source = read_ir_text(path), str(path)
        if params_file is None and params_path_for(path).is_file():
            params_file = params_path_for(path)
    module = parse_ir(text, source)
    params = ParamStore.load(params_file) if params_file else ParamStore()
    program = Program(module, params)
    if random_params:
        _fill_random(program)
    passes = parse_passes(pipeline) if pipeline else []
    missing = [op.param_name for op in program.param_ops() if op.param_name not in params]
    needing = [p.name for p in passes if isinstance(p, ParamPass)]
    if missing and needing:
        raise PassError(f"{needing[0]} needs parameter values; @{missing[0]} has none (give --params or --random-params)")
    run_passes(program, passes, verify_each=verify_each)
    result = print_ir(program.module)
    if output == "-":
        sys.stdout.write(result)
    else:
        Path(output).write_text(result)
    if params_out is not None:
        program.params.save(params_out)


def _fill_random(program: Program) -> None:
    g = torch.Generator().manual_seed(0)
    for op in program.param_ops():
        if op.param_name not in program.params:
            dtype = torch_dtype(element_of(op.result))
            shape = shape_of(op.result)
            value = torch.rand(shape, generator=g) + 0.5 if dtype.is_floating_point else torch.randint(0, 2, shape, generator=g)
            program.params.add(op.param_name, value.to(dtype))


# ops ----------------------------------------------------------------------------------


@main.command("ops")
@click.option(
    "--check",
    "model",
    metavar="MODEL",
    default=None,
    help="Export MODEL (path/to/file.py:factory or package.module:factory) as compile does and list the ATen ops it cannot import.",
)
@click.option("--arg", "factory_args", multiple=True, metavar="KEY=VALUE", help="Argument for the model factory (repeatable).")
@click.option("--dtype", type=click.Choice(list(_DTYPES)), default=None, help="Cast the model and its floating inputs first.")
@click.option("--batch", type=click.IntRange(min=1), default=None, help="Shorthand for --arg batch=N.")
@click.option("--json", "as_json", is_flag=True, help="With --check: print the findings as one JSON object.")
@user_errors
def ops_command(model: str | None, factory_args: tuple[str, ...], dtype: str | None, batch: int | None, as_json: bool) -> None:
    """List the tcp ops and the ATen ops the importer accepts, one per line (user kernels
    declared in this process appear as ``dnnc_user.<name>``).

    With ``--check MODEL``: import MODEL's exported program (nothing is compiled
    further) and list every ATen op it cannot take, with its count, reason and first
    source line; exit status 1 if there is one. Constant ops without a rule are
    computed at compile time and are not problems."""
    if model is not None:
        _check_ops(model, factory_args, dtype, batch, as_json)
        return
    if factory_args or dtype or batch or as_json:
        raise DnncError("--arg, --dtype, --batch and --json apply to --check MODEL")
    from dnnc.frontend.aten import IMPORT_RULES
    from dnnc.ir.tcp import ALL_OPS

    sections = {
        "tcp ops": [op.name for op in ALL_OPS],
        "extern ops (user kernels)": ["extern.kernel", "extern.dispatch"],
        "ATen ops": sorted(str(t) for t in IMPORT_RULES),
    }
    for title, names in sections.items():
        click.echo(f"{title} ({len(names)}):")
        for name in names:
            click.echo(f"  {name}")


def _check_ops(model: str, factory_args: tuple[str, ...], dtype: str | None, batch: int | None, as_json: bool) -> None:
    """``dnnc ops --check``: the import's own findings (one mechanism with compile's)."""
    import json

    from dnnc.frontend.problems import table
    from dnnc.frontend.torch_export import survey
    from dnnc.model_loader import parse_kwargs
    from dnnc.pipeline import CompileReport, exported_program

    if Path(model).suffix in STABLEHLO_SUFFIXES:
        raise DnncError(f"dnnc ops --check takes PyTorch models (path/to/file.py:factory); {model} is StableHLO")
    kwargs = parse_kwargs(factory_args) | ({"batch": batch} if batch is not None else {})
    with console.status("loading the model"):
        module, inputs, name = _load(model, kwargs, dtype)
    with console.status(f"exporting and importing {name}"):
        found = survey(exported_program(module, inputs, CompileReport()))
    computed = ", ".join(f"{op} x{n}" for op, n in found.computed.most_common())
    if as_json:
        click.echo(
            json.dumps(
                {
                    "model": name,
                    "supported": not found.unsupported,
                    "ops": dict(found.ops.most_common()),
                    "unsupported": [u.as_dict() for u in found.unsupported],
                    "computed_at_compile_time": dict(found.computed.most_common()),
                },
                indent=1,
            )
        )
    elif found.unsupported:
        click.echo(table(found.unsupported))
        if computed:
            click.echo(f"computed at compile time (constant): {computed}")
    else:
        also = f" ({computed} computed at compile time)" if computed else ""
        click.echo(f"all {len(found.ops)} ATen ops of {name} are supported{also}")
    if found.unsupported:
        sys.exit(1)


if __name__ == "__main__":
    main()
