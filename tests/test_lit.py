"""Runs the textual IR tests (tests/lit/**/*.mlir: RUN lines piping `dnnc opt`
into filecheck) as part of the pytest suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

LIT_DIR = Path(__file__).with_name("lit")


def test_lit_suite() -> None:
    # lit ships no __main__; its console script calls lit.main.main.
    command = [sys.executable, "-c", "import sys, lit.main; sys.exit(lit.main.main())", "-v", str(LIT_DIR)]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-2000:]
    assert "Failed" not in result.stdout
