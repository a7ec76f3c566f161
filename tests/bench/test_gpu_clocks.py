"""The clock sampler's rows and summaries, and the suite table's clock lines: a row timed
at a lowered clock says so, a row that was not sampled adds nothing."""

from __future__ import annotations

from bench import gpu_clocks
from bench.suite.report import clock_lines


def test_rows_are_parsed_and_a_malformed_one_is_dropped() -> None:
    row = gpu_clocks._row(["2026/11/30 00:35:09.250", " 1740", " 517.6", " 52", " 0x0000000000000004"])
    assert row is not None and row["sm_mhz"] == 1740 and row["power_w"] == 517.6
    assert row["t"] % 1 == 0.25
    assert gpu_clocks._row(["not a time", "x"]) is None


def test_the_summary_keeps_its_window_and_names_the_power_cap() -> None:
    rows = [
        {"t": 1.0, "sm_mhz": 1980.0, "power_w": 120.0, "temp_c": 40.0, "reasons": "0x0000000000000000"},
        {"t": 2.0, "sm_mhz": 1740.0, "power_w": 690.0, "temp_c": 52.0, "reasons": "0x0000000000000004"},
        {"t": 3.0, "sm_mhz": 1800.0, "power_w": 650.0, "temp_c": 53.0, "reasons": "0x0000000000000000"},
    ]
    window = gpu_clocks.summary(rows, 1.5, 3.0)
    assert window["samples"] == 2 and window["sm_mhz_mean"] == 1770.0 and window["sm_mhz_min"] == 1740.0
    assert window["power_capped"] is True
    assert gpu_clocks.summary(rows, 0.0, 1.0)["power_capped"] is False
    assert gpu_clocks.summary(rows, 5.0, 6.0) == {"samples": 0}


def test_the_suite_table_lists_clocked_rows_only() -> None:
    results = [
        {
            "workload": "big",
            "variants": [{"variant": "dnnc auto", "gpu_clock": {"samples": 9, "sm_mhz_mean": 1798.2, "power_capped": True}}],
        },
        {"workload": "small", "variants": [{"variant": "dnnc auto"}]},
    ]
    lines = clock_lines(results, ["dnnc auto"])
    assert lines[-1] == "| big | 1798 cap |"
    assert not any("small" in line for line in lines)
    assert clock_lines(results[1:], ["dnnc auto"]) == []
