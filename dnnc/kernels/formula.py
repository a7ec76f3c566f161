"""Integer formulas over shape symbols: a kernel's grid, its output dims and the
values of its push constants (``ceildiv(n, 64)``, ``n * 2``, ``min(m, 65535)``).

They are parsed once, when the kernel is declared, so a bad formula is an error
at declaration and not at the first launch. Only integer arithmetic is allowed:
literals, symbols, ``+ - * // %``, parentheses, ``ceildiv``, ``min`` and ``max``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from dnnc.errors import KernelDeclarationError

_BINARY: dict[type[ast.operator], Callable[[int, int], int]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
}
_CALLS: dict[str, tuple[int, Callable[..., int]]] = {
    "ceildiv": (2, lambda a, b: -(-a // b)),
    "min": (2, min),
    "max": (2, max),
}


@dataclass(frozen=True)
class Formula:
    text: str
    symbols: frozenset[str]
    _tree: ast.expr

    def __call__(self, values: Mapping[str, int]) -> int:
        missing = sorted(self.symbols - set(values))
        if missing:
            raise KernelDeclarationError(f"formula {self.text!r} uses {', '.join(missing)}, which nothing binds")
        try:
            return _evaluate(self._tree, values)
        except ZeroDivisionError:
            shown = ", ".join(f"{k}={values[k]}" for k in sorted(self.symbols))
            raise KernelDeclarationError(f"formula {self.text!r} divides by zero for {shown}") from None


def parse_formula(text: str | int, what: str) -> Formula:
    """``what`` names the formula in errors (``kernel simple_mul: grid[0]``)."""
    if isinstance(text, int) and not isinstance(text, bool):
        text = str(text)
    if not isinstance(text, str) or not text.strip():
        raise KernelDeclarationError(f"{what}: expected an integer formula such as 'ceildiv(n, 64)', got {text!r}")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        raise KernelDeclarationError(f"{what}: {text!r} is not a formula: {e.msg}") from None
    symbols: set[str] = set()
    _check(tree, text, what, symbols)
    return Formula(text.strip(), frozenset(symbols), tree)


def _check(node: ast.expr, text: str, what: str, symbols: set[str]) -> None:
    def bad(reason: str) -> KernelDeclarationError:
        allowed = "integers, shape symbols, + - * // %, ceildiv(a, b), min(a, b), max(a, b)"
        return KernelDeclarationError(f"{what}: {text!r}: {reason} (a formula may use {allowed})")

    if isinstance(node, ast.Constant):
        if not isinstance(node.value, int) or isinstance(node.value, bool):
            raise bad(f"{node.value!r} is not an integer")
    elif isinstance(node, ast.Name):
        symbols.add(node.id)
    elif isinstance(node, ast.BinOp):
        if type(node.op) not in _BINARY:
            raise bad(
                f"operator {type(node.op).__name__} is not allowed"
                + (" (use // or ceildiv)" if isinstance(node.op, ast.Div) else "")
            )
        _check(node.left, text, what, symbols)
        _check(node.right, text, what, symbols)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        _check(node.operand, text, what, symbols)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CALLS and not node.keywords:
        arity = _CALLS[node.func.id][0]
        if len(node.args) != arity:
            raise bad(f"{node.func.id} takes {arity} arguments, got {len(node.args)}")
        for arg in node.args:
            _check(arg, text, what, symbols)
    else:
        raise bad(f"{ast.unparse(node)!r} is not allowed")


def _evaluate(node: ast.expr, values: Mapping[str, int]) -> int:
    if isinstance(node, ast.Constant):
        return int(node.value)
    if isinstance(node, ast.Name):
        return int(values[node.id])
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](_evaluate(node.left, values), _evaluate(node.right, values))
    if isinstance(node, ast.UnaryOp):
        return -_evaluate(node.operand, values)
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    return _CALLS[node.func.id][1](*(_evaluate(a, values) for a in node.args))
