"""A measurement made in a fresh process (nothing imported, compiled or cached in memory
beforehand), which prints its result as JSON on its last line of output."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def last_json(command: Sequence[str], env: Mapping[str, str] | None = None, timeout_s: float = 600) -> dict[str, Any]:
    """The JSON object ``command`` prints last (run from the repository root, with ``env``
    over this process's environment), or ``{"status": "failed: ..."}`` for a non-zero exit,
    no output or a time-out, so one failed measurement is a row rather than the run's end."""
    try:
        done = subprocess.run(
            list(command),
            env={**os.environ, **(env or {})},
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"status": f"failed: timed out after {timeout_s:g} s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return {"status": f"failed: exit {done.returncode}: {' | '.join(tail)[:400]}"}
    return json.loads(lines[-1])
