"""``dnnc spec``: check tuning specs (alone and against a model), merge them, show
which record decides each group of a model."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click
import torch

from dnnc import knobs
from dnnc.cli.common import load_model, model_options, stacked, user_errors


@click.group("spec")
def spec_group() -> None:
    """Tuning specs: check them, merge them into one library."""


_spec_target = stacked(
    click.option("--arch", default=None, help="Target architecture, like sm_90 (default: the GPU here)."),
    click.option("--gpu-name", default=None, help="GPU name records' sku must be part of (default: the GPU here)."),
    click.option("--cudnn", default=None, help="cuDNN version to check version ranges against (default: installed)."),
    click.option("--triton", default=None, help="Triton version to check version ranges against (default: installed)."),
)
"""``--arch``, ``--gpu-name``, ``--cudnn``, ``--triton``: the target a spec command checks for."""


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
@model_options(batch=False)
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
    from dnnc.partition.spec_apply import only_specs, specs_for
    from dnnc.pipeline import ready_to_partition, to_canonical_tcp
    from dnnc.tuning.legality import check_decisions

    module, inputs, name = load_model(model, factory_args, dtype)
    program = ready_to_partition(to_canonical_tcp(module.eval(), inputs))
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
@model_options(batch=False)
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
    from dnnc.pipeline import ready_to_partition, to_canonical_tcp
    from dnnc.specs import resolve
    from dnnc.tuning.spec_report import spec_report

    module, inputs, _ = load_model(model, factory_args, dtype)
    resolved = resolve(_spec_libraries(paths), _spec_device(arch, gpu_name, cudnn, triton))
    for warning in resolved.warnings:
        click.echo(f"warning: {warning}")
    report = spec_report(ready_to_partition(to_canonical_tcp(module.eval(), inputs)), resolved.records)
    for line in report.lines():
        click.echo(line)
    unmatched = report.unmatched
    if strict and unmatched:
        raise click.ClickException(f"--strict: {len(unmatched)} groups match no record: {', '.join(s.label for s in unmatched)}")
