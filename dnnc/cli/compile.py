"""``dnnc compile``: a model (a factory, or a StableHLO file) to an artifact or IR,
with a summary of what was compiled and a check against eager (or the reference)."""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import torch
from rich.markup import escape
from rich.table import Table

from dnnc import knobs
from dnnc.cli.common import STABLEHLO_SUFFIXES, console, load_model, model_options, showing_progress, user_errors
from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program, params_path_for
from dnnc.ir.types import describe
from dnnc.numerics import Verdict
from dnnc.terminal import print_plain


@click.command("compile")
@click.argument("model")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Artifact to write (model.dnnc), or IR when it ends in .mlir (default: FACTORY.mlir).",
)
@model_options()
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default=None, help="Where the program will run.")
@click.option(
    "--target",
    metavar="sm_XY",
    default=None,
    help="Build for this GPU architecture (sm_90) on a machine without it: an artifact whose Triton kernels are "
    "compiled for it, plans chosen by tuning specs and heuristics (nothing timed); checked here on the CPU reference backend.",
)
@click.option("--dump-dir", type=click.Path(file_okay=False, path_type=Path), help="Also write the IR of every stage here.")
@click.option(
    "--partition",
    type=click.Choice(["greedy", "auto", "cudnn-only", "triton-only"]),
    default=None,
    help="How GPU groups are chosen (default: DNNC_PARTITION, else auto); see dnnc explain.",
)
@click.option(
    "--tuning-spec",
    "tuning_specs",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="A tuning-spec file or directory whose decisions override the partitioner's (repeatable, first wins).",
)
@click.option(
    "--dynamic",
    multiple=True,
    metavar="NAME=LOW..HIGH",
    help="A range of sizes the artifact takes: batch=1..64 (dimension 0 of every input), seq=16..512 "
    "(dimension 1 of inputs of rank 2+); repeatable. One program is compiled per bucket.",
)
@click.option(
    "--buckets",
    "bucket_sizes",
    multiple=True,
    metavar="SIZES",
    help="The bucket sizes for --dynamic: 1,8,32,64 (or batch=1,8,64 where several are dynamic); "
    "default powers of two and the range's high end.",
)
@click.option("--check/--no-check", default=True, show_default=True, help="Compare with PyTorch eager on fresh random inputs.")
@user_errors
def compile_command(
    model: str,
    output: Path | None,
    factory_args: tuple[str, ...],
    device: str | None,
    target: str | None,
    dtype: str | None,
    batch: int | None,
    dump_dir: Path | None,
    partition: str | None,
    tuning_specs: tuple[Path, ...],
    dynamic: tuple[str, ...],
    bucket_sizes: tuple[str, ...],
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
    from dnnc.numerics import check_against_eager
    from dnnc.paths import check_writable

    if output is not None:
        check_writable(output)
    specs = os.pathsep.join(str(p) for p in tuning_specs) or None
    settings = {k: v for k, v in {"dump_dir": dump_dir, "partition": partition, "tuning_specs": specs}.items() if v is not None}
    ranges, chosen = _ranges(dynamic, bucket_sizes)
    if Path(model).suffix in STABLEHLO_SUFFIXES:
        if ranges:
            raise click.UsageError("--dynamic takes a PyTorch model factory; a StableHLO file is compiled for its static shapes")
        with knobs.override(**settings):
            _compile_stablehlo(Path(model), output, device, target, check)
        return
    with knobs.override(**settings):
        with console.status("loading the model"):
            started = time.perf_counter()
            module, inputs, name = load_model(model, factory_args, dtype, batch)
        console.print(f"[dim]loaded {name} in {time.perf_counter() - started:.2f} s[/dim]")
        dynamic_args = {"dynamic": ranges, "buckets": chosen} if ranges else {}
        compiled = _compile_showing_progress(
            name, lambda: dnnc.compile(module, inputs, device=device, target=target, **dynamic_args)
        )
    output = output or Path(f"{name}.dnnc" if ranges or target else f"{name}.mlir")
    with console.status(f"writing {output}"):
        compiled.save(output)
    print_summary(compiled, output)
    if check:
        for shown, example in checked_inputs(compiled, inputs):
            with console.status(f"checking against PyTorch eager{shown}"):
                verdict = check_against_eager(compiled, module, example)
            if not verdict.ok:
                report_wrong_steps(compiled, example)
            report_check(verdict, shown)


def _ranges(dynamic: tuple[str, ...], bucket_sizes: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, list[int]] | None]:
    """``--dynamic`` as ``dnnc.compile``'s ``dynamic`` (name -> (low, high)) and ``--buckets`` as its ``buckets``."""
    from dnnc.buckets import parse_sizes, ranges_of

    if bucket_sizes and not dynamic:
        raise click.UsageError("--buckets needs --dynamic (the range the buckets cover)")
    ranges = ranges_of(list(dynamic))
    chosen: dict[str, list[int]] = {}
    for text in bucket_sizes:
        chosen.update(parse_sizes(text, ranges))
    return {n: (r.low, r.high) for n, r in ranges.items()}, chosen or None


def checked_inputs(compiled: Any, inputs: tuple[Any, ...]) -> list[tuple[str, tuple[Any, ...]]]:
    """What the check runs: the example inputs; for a bucketed module also inputs one
    below its largest bucket (padded), labelled by their sizes."""
    from dnnc.bucketed import BucketedModule
    from dnnc.buckets import resized

    if not isinstance(compiled, BucketedModule):
        return [("", inputs)]
    plan = compiled.plan
    example = plan.measure(inputs)
    checks = [(f" at {plan.label(example)}", inputs)]
    largest = plan.buckets()[0]
    below = tuple(max(s - 1, plan.ranges[n].low) for n, s in zip(plan.names, largest))
    if below != largest and below != example:
        sizes = dict(zip(plan.names, below))
        padded = tuple(resized(x, a, sizes) for x, a in zip(inputs, plan.input_axes))
        checks.append((f" at {plan.label(below)}, padded to {plan.label(largest)}", padded))
    return checks


def _compile_stablehlo(path: Path, output: Path | None, device: str | None, target: str | None, check: bool) -> None:
    """Import a StableHLO file, compile it; on a GPU check it against the reference backend."""
    from dnnc.api import compile_program
    from dnnc.frontend.stablehlo import import_stablehlo
    from dnnc.numerics import check_against_reference

    with console.status(f"importing {path}"):
        started = time.perf_counter()
        program = import_stablehlo(path)
    console.print(f"[dim]imported {path} in {time.perf_counter() - started:.2f} s[/dim]")
    reference = Program(program.module.clone(), ParamStore(program.params))
    compiled = _compile_showing_progress(path.name, lambda: compile_program(program, device=device, target=target))
    output = output or path.with_suffix(".dnnc")
    with console.status(f"writing {output}"):
        compiled.save(output)
    print_summary(compiled, output)
    if check:
        verdict = check_against_reference(compiled, reference)
        if not verdict.ok:
            from dnnc.inputs import random_tensor

            g = torch.Generator().manual_seed(0)
            report_wrong_steps(compiled, tuple(random_tensor(tuple(s.shape), s.dtype, g) for s in compiled.input_specs))
        report_check(verdict)


def _compile_showing_progress(name: str, compile_it: Callable[[], Any]) -> Any:
    """Compile with one status line on a terminal (stage, candidates timed, kernels
    built), then say in one line what the compile did and decided."""
    started = time.perf_counter()
    with showing_progress(f"compiling {escape(name)}") as counts:
        compiled = compile_it()
    programs = _programs(compiled)
    reused = " (an earlier compile, from the compile cache)" if all(m.report.reused for _, m in programs) else ""
    buckets = f" for {len(programs)} buckets" if len(programs) > 1 else ""
    done = [f"compiled {name}{buckets} in {time.perf_counter() - started:.1f} s{reused}"]
    if counts.to_time:
        done.append(f"{counts.timed} candidate groups timed")
    if counts.kernels:
        done.append(f"{counts.kernels} kernels built")
    print_plain(console, ", ".join(done))
    for label, module in programs:
        decided = decisions_line(module.program.metadata.get("decisions"))
        if decided:
            print_plain(console, f"{label}: {decided}" if label else decided)
    return compiled


def _programs(compiled: Any) -> list[tuple[str, Any]]:
    """(bucket label, its CompiledModule) of a bucketed module, the largest first; ("", it) of one program."""
    from dnnc.bucketed import BucketedModule

    if isinstance(compiled, BucketedModule):
        return [(compiled.plan.label(k), m) for k, m in compiled.modules.items()]
    return [("", compiled)]


def decisions_line(record: Any) -> str | None:
    """The partitioner's decision in one line (``dnnc explain`` gives the detail)."""
    if not isinstance(record, dict) or not record.get("groups"):
        return None
    groups = Counter(g["backend"] for g in record["groups"])
    shown = ", ".join(f"{n} {b}" for b, n in sorted(groups.items()))
    line = f"partition {record.get('policy', '?')}: {shown} groups"
    programs = record.get("programs")
    if isinstance(programs, dict) and programs.get("winner"):
        timed = {k: c.get("program_ms") for k, c in programs.get("contenders", {}).items() if c.get("program_ms")}
        against = ", ".join(f"{k} {ms:.3f} ms" for k, ms in timed.items())
        cached = " (from the cache)" if programs.get("cached") else ""
        line += f"; whole programs: {programs['winner']} won{cached}" + (f" ({against})" if against else "")
    return line + "; dnnc explain for why"


def print_summary(compiled: Any, output: Path) -> None:
    programs = _programs(compiled)
    whole = compiled
    compiled = programs[0][1]
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
    if len(programs) > 1:
        plan = whole.plan
        ranges = ", ".join(r.text() for r in plan.ranges.values())
        console.print(
            f"buckets: {', '.join(label for label, _ in programs)} (ranges {ranges}; signature above: {programs[0][0]})"
        )
    console.print(f"parameters: {len(program.params)} tensors, {program.params.nbytes() / 1e6:.1f} MB")
    summary = compiled.summary()
    steps = ", ".join(f"{n} {b}" for b, n in sorted(summary["steps"].items()))
    if compiled.device == "cuda":
        console.print(f"backend: GPU ({steps}; torch.cuda {torch.cuda.get_device_name()})")
        held = summary.get("memory")
        if held:
            console.print(
                f"device memory held: weights {held['weights_bytes'] / 1e6:.1f} MB, cuDNN workspaces "
                f"{held['workspace_bytes'] / 1e6:.1f} MB, intermediates' arena {held['arena_bytes'] / 1e6:.1f} MB"
            )
        for f in summary["fallbacks"]:
            console.print(f"[yellow]fallback[/yellow]: {f['backend']} group {f['kind']}: {f['reason']}")
        for name, variant in summary["user_kernels"].items():
            console.print(f"user kernel {name}: {variant}")
    elif compiled.target != "cpu":
        console.print(f"backend: GPU {compiled.target}, built here without it ({steps}); runs here on the CPU reference backend")
    else:
        console.print(f"backend: CPU reference ({compiled.device})")
    if output.suffix == ".mlir":
        console.print(f"wrote {output} and {params_path_for(output)}")
    else:
        peak = whole.memory_peak_bytes
        arena = f"; memory plan peak {peak / 1e6:.1f} MB" if peak is not None else ""
        console.print(f"wrote {output} ({output.stat().st_size / 1e6:.1f} MB, target {compiled.target}{arena})")


WRONG_STEPS_SHOWN = 5


def report_wrong_steps(compiled: Any, example: tuple[Any, ...]) -> None:
    """Where a GPU program's output is off: each step judged alone against its op's
    reference rule on the operands it got (``CompiledModule.check_steps``), the steps over
    their tolerance printed, the first of them the kernel to look at."""
    if getattr(compiled, "device", None) != "cuda" or not hasattr(compiled, "check_steps"):
        return
    on_device = tuple(x.to(compiled.placed) if isinstance(x, torch.Tensor) else x for x in example)
    with console.status("judging each step alone"):
        checks = compiled.check_steps(*on_device)
    wrong = [c for c in checks if not c.ok]
    if not wrong:
        console.print("each step, judged alone on its own inputs, is within its tolerance")
        return
    for check in wrong[:WRONG_STEPS_SHOWN]:
        console.print(escape(check.describe()))
    if len(wrong) > WRONG_STEPS_SHOWN:
        console.print(f"and {len(wrong) - WRONG_STEPS_SHOWN} more steps over their tolerance")


def report_check(verdict: Verdict, where: str = "") -> None:
    """Print whether every output matched; fail the command if one did not."""
    shown = "[green]matches[/green]" if verdict.ok else "[red]DIFFERS from[/red]"
    console.print(f"check: {shown} {verdict.against} on fresh random inputs{where} ({verdict.describe()})")
    if not verdict.ok:
        raise click.ClickException(f"compiled program does not match {verdict.against}: {verdict.problems[0]}")
