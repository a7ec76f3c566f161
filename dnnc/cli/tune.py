"""``dnnc tune``: measure a model's groups on this GPU and write a tuning spec."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape

from dnnc.cli.common import console, load_model, model_options, showing_progress, user_errors


@click.command("tune")
@click.argument("model")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True, help="The spec to write (TOML).")
@model_options()
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
    from dnnc.tuning import tune as tuning

    module, inputs, name = load_model(model, factory_args, dtype, batch)
    module = module.eval()
    with showing_progress(f"tuning {escape(name)} on the GPU (partition auto, measured)") as counts:
        run = tuning.tune(module, inputs, sku=sku)
    tuned = run.tuned
    output.write_text(tuning.spec_text(tuned, name, run.device.name))
    console.print(
        f"tuned {name} on {run.device.name} in {run.seconds:.1f} s ({counts.timed} candidate groups timed, "
        f"{counts.kernels} kernels built): {tuned.sites} sites, {len(tuned.records)} records written to {output}"
    )
    for line in tuned.conflicts + tuned.skipped:
        console.print(f"[yellow]note[/yellow]: {line}")
    if not check:
        return
    with showing_progress("compiling with the spec alone"):
        checked = tuning.check_spec(run, module, inputs, str(output))
    decisions, groups, differences = checked.decisions, checked.groups, checked.differences
    measured = decisions.get("measured")
    console.print(
        f"with the spec on a fresh cache: compiled in {checked.seconds:.1f} s ({'measured' if measured else 'nothing measured'}), "
        + ", ".join(f"{label} {ms:.4f} ms" for label, ms in checked.times.items())
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
