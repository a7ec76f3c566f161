"""What a tuning spec may choose for a generated (Triton) kernel: its config (block
sizes, warps, stages), used as is instead of tuned. A config's meaning holds within
one Triton major release."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from xdsl.ir import Operation

from dnnc.backends.interface import SpecChoice
from dnnc.backends.triton.configs import config_problem


def _problem(choice: Mapping[str, Any]) -> tuple[str, str] | None:
    config = choice.get("config")
    if not isinstance(config, dict) or not config:
        return "config", "a Triton decision needs a config table"
    for key, value in config.items():
        problem = config_problem(key, value)
        if problem:
            return key, f"decision.config.{key}: {problem}"
    return None


def _describe(choice: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in choice.get("config", {}).items())


def _of_kernel(op: Operation, kernel: Any) -> Mapping[str, Any] | None:
    """The config the kernel was generated with, less how it was launched (``PDL``, which
    follows the GPU and the settings where the spec is applied); None for a group not
    built here."""
    config = {k: v for k, v in (getattr(kernel, "config", None) or {}).items() if k != "PDL"}
    return {"config": config} if config else None


def _holds_for(choice: Mapping[str, Any], version: str) -> str | None:
    major = int((re.findall(r"\d+", version) or ["0"])[0])
    return f">={major}.0,<{major + 1}"


def _applied(choice: Mapping[str, Any]) -> dict[str, int] | None:
    config = choice.get("config")
    return dict(config) if config else None


TRITON_SPEC = SpecChoice(
    library="triton",
    keys=("config",),
    problem=_problem,
    describe=_describe,
    of_kernel=_of_kernel,
    holds_for=_holds_for,
    applied=_applied,
)
