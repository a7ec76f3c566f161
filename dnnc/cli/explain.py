"""``dnnc explain``: which backend would run which ops of a model, at what cost, and why."""

from __future__ import annotations

from pathlib import Path

import click

from dnnc.cli.common import console, load_model, model_options, out, user_errors


@click.command("explain")
@click.argument("model")
@model_options(batch=False)
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
    """Show which backend would run which ops of MODEL, at what cost, and why. MODEL
    may also be an artifact (model.dnnc): the decisions its compile recorded, each
    bucket's for an artifact of several (each bucket is partitioned for its shapes)."""
    import json

    from dnnc.api import explain
    from dnnc.partition.explain import explain_lines

    if model.endswith(".dnnc"):
        _explain_artifact(Path(model), alternatives, json_path)
        return
    module, inputs, _ = load_model(model, factory_args, dtype)
    chosen = tuple(b.strip() for b in backends.split(",") if b.strip()) if backends else None
    record = explain(module.eval(), inputs, policy=policy, backends=chosen)
    for line in explain_lines(record, alternatives):
        out.print(line, markup=False, highlight=False)
    if json_path is not None:
        json_path.write_text(json.dumps(record, indent=1))
        console.print(f"wrote {json_path}")


def _explain_artifact(path: Path, alternatives: bool, json_path: Path | None) -> None:
    import json

    from dnnc.artifact import read_artifact
    from dnnc.partition.explain import explain_lines

    contents = read_artifact(path)
    entries = contents.buckets or [("", contents)]
    records = {label: entry.program.metadata.get("decisions") for label, entry in entries}
    for label, record in records.items():
        if label:
            out.print(f"bucket {label}:", markup=False, highlight=False)
        if not record:
            out.print("  no decisions recorded (compiled for the CPU, or with the greedy policy)", markup=False, highlight=False)
            continue
        for line in explain_lines(record, alternatives):
            out.print(("  " if label else "") + line, markup=False, highlight=False)
    if json_path is not None:
        json_path.write_text(json.dumps(records if contents.buckets else records[""], indent=1))
        console.print(f"wrote {json_path}")
