"""What a tuning spec may choose for a cuDNN graph: the plan, as an engine id with
its knobs, or as the engine tag cuDNN prints (``eng32_k2=2_k6=3``), or both. Engine
ids and knobs are stable within one cuDNN minor release, so a chosen plan holds for
that release only; choosing cuDNN alone holds for any."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from xdsl.ir import Operation

from dnnc.backends.interface import SpecChoice

TAG = re.compile(r"eng\d+(_k\d+=-?\d+)*")
"""An engine tag: the engine id, then every knob by number."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _problem(choice: Mapping[str, Any]) -> tuple[str, str] | None:
    engine, knobs, tag = choice.get("engine"), choice.get("knobs", {}), choice.get("tag")
    if engine is not None and (not _is_int(engine) or engine < 0):
        return "engine", "decision.engine is a cuDNN engine id (an integer >= 0)"
    if not isinstance(knobs, dict) or not all(_is_int(v) for v in knobs.values()):
        return "knobs", "decision.knobs maps knob names to integers"
    if tag is not None and not TAG.fullmatch(str(tag)):
        return "tag", f"decision.tag {tag!r} is not a cuDNN engine tag like 'eng32_k2=2_k6=3'"
    return None


def _describe(choice: Mapping[str, Any]) -> str:
    named = choice.get("tag") or choice.get("engine")
    return "" if named is None else str(named)


def _of_kernel(op: Operation, kernel: Any) -> Mapping[str, Any]:
    """The plan the kernel was built with; an op not built here has the plan a spec put
    on it (``plan``), if any; no plan at all is the bare choice of cuDNN."""
    if kernel is not None:
        plan = (kernel.record() or {}).get("plan")
    else:
        attr = getattr(op, "plan", None)
        plan = json.loads(attr.data) if attr is not None else None
    if plan is None:
        return {}
    tag = plan.get("name") or None
    choice: dict[str, Any] = {"engine": int(plan["engine"])}
    if tag and TAG.fullmatch(tag):
        choice["tag"] = tag
    choice["knobs"] = {str(k): int(v) for k, v in (plan.get("knobs") or {}).items()}
    return choice


def _holds_for(choice: Mapping[str, Any], version: str) -> str | None:
    if choice.get("engine") is None and choice.get("tag") is None:
        return None
    major, minor = ([int(p) for p in re.findall(r"\d+", version)[:2]] + [0])[:2]
    return f">={major}.{minor},<{major}.{minor + 1}"


def _applied(choice: Mapping[str, Any]) -> str | None:
    """The plan JSON (``PlanRecord``) the graph is built from without tuning, or None."""
    engine, tag = choice.get("engine"), choice.get("tag")
    if engine is None and tag is None:
        return None
    if engine is None:
        engine = int(str(tag).split("_")[0].removeprefix("eng"))
    return json.dumps({"engine": engine, "knobs": dict(choice.get("knobs", {})), "name": tag or "", "ms": None, "timed": 0})


CUDNN_SPEC = SpecChoice(
    library="cudnn",
    keys=("engine", "tag", "knobs"),
    problem=_problem,
    describe=_describe,
    of_kernel=_of_kernel,
    holds_for=_holds_for,
    applied=_applied,
)
