"""The ``dnnc`` command: one module per verb (or family of verbs), each a thin layer
that parses arguments, calls the library and prints what it returns."""

from __future__ import annotations

import click

from dnnc.cli.compile import compile_command
from dnnc.cli.explain import explain_command
from dnnc.cli.ir_tools import ops_command, opt_command
from dnnc.cli.run import bench_command, inspect_command, run_command
from dnnc.cli.serve import serve_command
from dnnc.cli.spec import spec_group
from dnnc.cli.tune import tune_command
from dnnc.errors import DnncError


@click.group()
@click.version_option(package_name="dnnc")
def main() -> None:
    """dnnc: compile deep-learning models for inference."""
    from dnnc.log import configure

    try:
        configure()
    except DnncError as e:  # a bad DNNC_* setting
        raise click.ClickException(str(e)) from None


for command in (
    compile_command,
    explain_command,
    spec_group,
    tune_command,
    run_command,
    bench_command,
    inspect_command,
    serve_command,
    opt_command,
    ops_command,
):
    main.add_command(command)

__all__ = ["main"]
