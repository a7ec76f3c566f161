"""``dnnc inspect``'s account of kernel records: how many each backend recorded and how
many carry their kernel compiled, for which target (a load there compiles none)."""

from __future__ import annotations

from pathlib import Path

from dnnc.artifact.describe import kernel_records
from dnnc.cli.run import _inspect_lines


def test_records_with_their_compiled_kernels_are_counted_per_backend() -> None:
    compiled = {"target": "sm_90", "key": "k", "hash": "h", "files": {"k.cubin": "AA=="}}
    kernels = {
        "triton": [{"ordinal": 0, "object": compiled}, {"ordinal": 1, "object": compiled}, {"ordinal": 2}],
        "cudnn": [{"ordinal": 0}],
        "extern": [],
    }
    summary = kernel_records(kernels)
    assert summary == {
        "cudnn": {"records": 1, "compiled": 0, "targets": []},
        "triton": {"records": 3, "compiled": 2, "targets": ["sm_90"]},
    }
    facts = {
        "manifest": {"format": "dnnc-artifact", "schema": 1, "dnnc": "0", "target": "sm_90"},
        "device_name": None,
        "memory_peak_bytes": None,
        "versions": {},
        "inputs": [],
        "outputs": [],
        "input_names": [],
        "output_names": [],
        "ops_by_backend": {},
        "parameters": {"tensors": 0, "bytes": 0},
        "fallbacks": [],
        "user_kernels": {},
        "kernel_records": summary,
        "decisions": None,
    }
    lines = _inspect_lines(Path("m.dnnc"), facts)
    assert "triton kernels: 3 recorded, 2 stored compiled for sm_90" in lines
    assert "cudnn kernels: 1 recorded" in lines
