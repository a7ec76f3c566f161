"""bench/family_sweep.py on the CPU: each model compiled in its own process and
judged against float64 eager, one JSON line each; what stops a model is named."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import family_sweep

ROOT = Path(__file__).resolve().parents[2]


def test_every_model_has_its_own_name() -> None:
    names = [s["name"] for s in family_sweep.specs()]
    assert len(names) == len(set(names)) and len(names) > 90


def test_a_model_is_compiled_and_judged_in_its_own_process(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    out = tmp_path / "sweep.jsonl"
    command = [sys.executable, str(ROOT / "bench" / "family_sweep.py"), "--only", "electra", "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["name"] == "electra" and row["status"] == "ok", row
    assert row["err"] <= max(2 * row["eager_f32_err"], 1e-4) and row["seconds"] > 0


def test_what_stops_a_model_is_named() -> None:
    spec = {
        "name": "broken",
        "lib": "transformers",
        "config": "NoSuchConfig",
        "model": "x",
        "field": None,
        "inputs": "tokens",
        "seq": 4,
        "kw": {},
    }
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "family_sweep.py"), "--one", json.dumps(spec)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    row = json.loads(done.stdout.splitlines()[-1])
    assert row["status"] == "error" and row["name"] == "broken" and row["message"]
