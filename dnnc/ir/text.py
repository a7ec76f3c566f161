"""Textual IR in and out. Printing then parsing then printing gives the same text."""

from __future__ import annotations

import io

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError, VerifyException

from dnnc.errors import IRError
from dnnc.ir.context import make_context
from dnnc.ir.memo_parser import MemoParser


def print_ir(op: Operation) -> str:
    stream = io.StringIO()
    Printer(stream=stream).print_op(op)
    return stream.getvalue() + "\n"


def parse_ir(text: str, source: str = "<string>", verify: bool = True) -> ModuleOp:
    """Parse a module; errors name the source and the line."""
    try:
        module = MemoParser(make_context(), text, name=source).parse_module()
    except ParseError as e:
        raise IRError(f"{source}: cannot parse IR:\n{e}") from None
    if verify:
        verify_ir(module, source)
    return module


def verify_ir(module: Operation, source: str = "<module>") -> None:
    try:
        module.verify()
    except VerifyException as e:
        raise IRError(f"{source}: IR does not verify: {e}") from None
