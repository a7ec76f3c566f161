"""bench/fresh_process.py: a child's last JSON line is its result; a failing, silent or
slow child is a failed row naming why, never an exception that ends the run."""

from __future__ import annotations

import sys

from bench.fresh_process import last_json


def test_the_last_line_is_the_result() -> None:
    assert last_json([sys.executable, "-c", "print('noise'); print('{\"x\": 1}')"]) == {"x": 1}


def test_the_environment_reaches_the_child() -> None:
    code = "import json, os; print(json.dumps({'v': os.environ['DNNC_FRESH_TEST']}))"
    assert last_json([sys.executable, "-c", code], {"DNNC_FRESH_TEST": "set"}) == {"v": "set"}


def test_failures_are_rows() -> None:
    crashed = last_json([sys.executable, "-c", "import sys; sys.exit('broken here')"])
    assert crashed["status"].startswith("failed: exit 1") and "broken here" in crashed["status"]
    assert last_json([sys.executable, "-c", "pass"])["status"] == "failed: exit 0: "
    slow = last_json([sys.executable, "-c", "import time; time.sleep(5)"], timeout_s=0.5)
    assert slow == {"status": "failed: timed out after 0.5 s"}
