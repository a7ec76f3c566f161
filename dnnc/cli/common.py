"""What the ``dnnc`` verbs share: the consoles, clean errors, and the options that
name a model built by a factory (``--arg``, ``--dtype``, ``--batch``)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from functools import wraps
from typing import Any

import click
import torch
from rich.console import Console
from rich.markup import escape

from dnnc import progress
from dnnc.casting import FLOAT_DTYPES, cast_inputs
from dnnc.errors import DnncError
from dnnc.terminal import printable

console = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)


STABLEHLO_SUFFIXES = (".mlir", ".mlirbc")
"""``dnnc compile x.mlir`` reads StableHLO (text, bytecode or a portable artifact)."""


@contextlib.contextmanager
def showing_progress(label: str) -> Iterator[progress.Progress]:
    """One status line on a terminal while the block compiles: ``label`` (rich markup,
    names in it escaped), then the compile's stage, candidates timed and kernels
    built; yields the counts."""
    with (
        console.status(label) as status,
        progress.watching(lambda p: status.update(f"{label}: {escape(p.line())}")) as counts,
    ):
        yield counts


def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Show dnnc's own errors as one clear message, without a traceback."""

    @wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except DnncError as e:
            raise click.ClickException(printable(str(e), lines=True)) from None  # messages quote files

    return run


def stacked(*options: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """One decorator applying ``options`` in the order they are listed (as written above a function)."""

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


def model_options(batch: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--arg KEY=VALUE`` (repeatable), ``--dtype`` and, with ``batch``, ``--batch N``:
    how the verbs that take a MODEL factory call and cast it (see ``load_model``)."""
    options = [
        click.option(
            "--arg", "factory_args", multiple=True, metavar="KEY=VALUE", help="Argument for the model factory (repeatable)."
        ),
        click.option(
            "--dtype", type=click.Choice(list(FLOAT_DTYPES)), default=None, help="Cast the model and its floating inputs first."
        ),
    ]
    if batch:
        options.append(click.option("--batch", type=click.IntRange(min=1), default=None, help="Shorthand for --arg batch=N."))
    return stacked(*options)


def load_model(
    model: str, factory_args: tuple[str, ...], dtype: str | None, batch: int | None = None
) -> tuple[torch.nn.Module, tuple[Any, ...], str]:
    """The model from its factory (``model_loader``) called with ``--arg``s (and
    ``--batch``), cast with its floating inputs to ``dtype``."""
    from dnnc.model_loader import load_model as from_factory
    from dnnc.model_loader import parse_kwargs

    kwargs = parse_kwargs(factory_args) | ({"batch": batch} if batch is not None else {})
    module, inputs, name = from_factory(model, kwargs)
    if dtype is None:
        return module, inputs, name
    return module.to(FLOAT_DTYPES[dtype]), cast_inputs(inputs, FLOAT_DTYPES[dtype]), name
