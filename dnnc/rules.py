"""Rule tables: what a rule handles (an ATen overload, a StableHLO op name, a tcp op
class) mapped to the function that handles it, filled by a decorator where the rule
is written. The importers and the reference backend each keep one."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
R = TypeVar("R", bound=Callable[..., object])


class RuleTable(dict[K, R]):
    def __init__(self, what: str):
        super().__init__()
        self.what = what
        """What the table's rules do (``ATen import``), for the message on a clash."""

    def rule(self, *keys: K) -> Callable[[R], R]:
        """``@table.rule(a, b)``: the decorated function handles ``a`` and ``b``; a key
        already taken is a programming error, named at import."""

        def register(fn: R) -> R:
            for key in keys:
                if key in self:
                    raise ValueError(f"two {self.what} rules for {key}: {self[key].__qualname__} and {fn.__qualname__}")
                self[key] = fn
            return fn

        return register
