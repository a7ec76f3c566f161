"""ncu's CSV read as a table per kernel: metrics by name, durations in microseconds
whatever unit ncu wrote, the lines ncu prints before the table skipped."""

from __future__ import annotations

from pathlib import Path

from bench.ncu_kernels import table

HEADER = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"'


def _row(ident: int, kernel: str, metric: str, unit: str, value: str) -> str:
    return (
        f'"{ident}","1","python3","h","{kernel}","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0","S","{metric}","{unit}","{value}"'
    )


def test_the_table_has_each_kernels_metrics_in_order(tmp_path: Path) -> None:
    path = tmp_path / "k.csv"
    lines = [
        "==PROF== Connected to process 1",
        HEADER,
        _row(1, "dnnc_conv2d_boxes", "Duration", "ns", "15,360"),
        _row(1, "dnnc_conv2d_boxes", "DRAM Throughput", "%", "41.2"),
        _row(0, "dnnc_conv2d_stem", "Duration", "msecond", "0.047"),
        _row(0, "dnnc_conv2d_stem", "Compute (SM) Throughput", "%", "1,5.5"),
        _row(0, "dnnc_conv2d_stem", "Something Else", "", "3"),
        _row(0, "dnnc_conv2d_stem", "SM Frequency", "hz", "1,755,000,000"),
    ]
    path.write_text("\n".join(lines) + "\n")
    found = table(path)
    assert [k["kernel"] for k in found] == ["dnnc_conv2d_stem", "dnnc_conv2d_boxes"]
    assert abs(found[0]["duration_us"] - 47.0) < 1e-9 and found[0]["sm_pct"] == 15.5 and found[0]["sm_mhz"] == 1755.0
    assert found[1] == {"id": 1, "kernel": "dnnc_conv2d_boxes", "grid": "(132, 1, 1)", "duration_us": 15.36, "dram_pct": 41.2}
    assert table(tmp_path / "k.csv") == found
    (tmp_path / "empty.csv").write_text("==PROF== nothing profiled\n")
    assert table(tmp_path / "empty.csv") == []
