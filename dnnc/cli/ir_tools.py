"""The verbs over IR and the importer: ``dnnc opt`` (passes over textual IR, like
mlir-opt) and ``dnnc ops`` (what the importer takes; what a model needs that it does not)."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import torch

from dnnc.cli.common import STABLEHLO_SUFFIXES, console, load_model, model_options, user_errors
from dnnc.errors import DnncError, PassError
from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program, params_path_for, read_ir_text
from dnnc.ir.types import element_of, shape_of, torch_dtype


@click.command("opt")
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


@click.command("ops")
@click.option(
    "--check",
    "model",
    metavar="MODEL",
    default=None,
    help="Export MODEL (path/to/file.py:factory or package.module:factory) as compile does and list the ATen ops it cannot import.",
)
@model_options()
@click.option("--json", "as_json", is_flag=True, help="Print the op lists (with --check: the findings) as one JSON object.")
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
    if factory_args or dtype or batch:
        raise DnncError("--arg, --dtype and --batch apply to --check MODEL")
    from dnnc.frontend.aten import IMPORT_RULES
    from dnnc.ir.tcp import ALL_OPS

    sections = {
        "tcp ops": [op.name for op in ALL_OPS],
        "extern ops (user kernels)": ["extern.kernel", "extern.dispatch"],
        "ATen ops": sorted(str(t) for t in IMPORT_RULES),
    }
    if as_json:
        import json

        keys = {"tcp ops": "tcp", "extern ops (user kernels)": "extern", "ATen ops": "aten"}
        click.echo(json.dumps({keys[title]: names for title, names in sections.items()}, indent=1))
        return
    for title, names in sections.items():
        click.echo(f"{title} ({len(names)}):")
        for name in names:
            click.echo(f"  {name}")


def _check_ops(model: str, factory_args: tuple[str, ...], dtype: str | None, batch: int | None, as_json: bool) -> None:
    """``dnnc ops --check``: the import's own findings (one mechanism with compile's)."""
    import json

    from dnnc.frontend.problems import table
    from dnnc.frontend.torch_export import survey
    from dnnc.pipeline import CompileReport, exported_program

    if Path(model).suffix in STABLEHLO_SUFFIXES:
        raise DnncError(f"dnnc ops --check takes PyTorch models (path/to/file.py:factory); {model} is StableHLO")
    with console.status("loading the model"):
        module, inputs, name = load_model(model, factory_args, dtype, batch)
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
