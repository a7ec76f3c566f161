"""scripts/pytest_live.py: each outcome is written as its test ends, once, with or
without pytest-xdist workers, and a failure's report beside it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_outcomes_are_written_once_each(tmp_path: Path, workers: list[str]) -> None:
    tests = tmp_path / "test_sample.py"
    tests.write_text("def test_ok():\n    pass\n\ndef test_bad():\n    assert 1 == 2\n")
    env = {**os.environ, "OUT": str(tmp_path), "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "scripts.pytest_live", *workers, str(tests)]
    subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, check=False, timeout=120)
    lines = [json.loads(x) for x in (tmp_path / "live.jsonl").read_text().splitlines()]
    assert sorted((x["id"].split("::")[1], x["outcome"]) for x in lines) == [("test_bad", "failed"), ("test_ok", "passed")]
    assert "assert 1 == 2" in (tmp_path / "failures.txt").read_text()
