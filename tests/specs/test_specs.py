"""Tuning specs on the CPU: parsing, validation errors that name the file and the
line, what matchers accept and when two overlap, and the precedence chain with
append / replace / disable, targets and version-range skipping."""

from __future__ import annotations

from pathlib import Path

import pytest

from dnnc.specs import GroupFacts, SpecError, load_library, parse_library, resolve
from dnnc.specs.library import Device
from dnnc.specs.match import parse_dim, parse_matcher

EXAMPLE = """\
schema = 1
mode = "append"
target = { arch = "sm_90" }

[[record]]
name = "stem"
match = { kind = "conv_bias_relu", dtype = ["f16"], input = ["*", 8, 224, 224], weight = [64, 8, 7, 7] }
versions = { cudnn = ">=9.0,<10" }
decision = { backend = "cudnn", engine = 32, knobs = { TILE_SIZE = 2 }, tag = "eng32_k2=2_k6=3" }
provenance = { by = "dnnc tune", measured_ms = 0.021, baseline_ms = 0.03, date = "2026-11-22" }

[[record]]
name = "late convs"
match = { kind = "conv*", output = ["*", "%64", "1..14", "1..14"] }
decision = { backend = "triton", config = { BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 32, num_warps = 4 } }
"""

H100 = Device("sm_90", "NVIDIA H100 80GB HBM3", {"cudnn": "9.19.0", "triton": "3.6.0"})
STEM = GroupFacts("conv_bias_relu", "f16", {"input": (32, 8, 224, 224), "weight": (64, 8, 7, 7), "output": (32, 64, 112, 112)})
LATE = GroupFacts("conv_bias_add_relu", "f16", {"input": (32, 512, 7, 7), "output": (32, 2048, 7, 7)})


def test_a_library_parses_into_typed_records() -> None:
    lib = parse_library(EXAMPLE, "ex.toml")
    stem, late = lib.records
    assert lib.mode == "append" and lib.layer is None
    assert stem.source == "ex.toml:5" and late.source == "ex.toml:12"
    assert (
        stem.decision.choice["engine"] == 32 and stem.decision.choice["knobs"] == {"TILE_SIZE": 2} and stem.target.arch == "sm_90"
    )
    assert late.decision.choice["config"]["BLOCK_M"] == 64 and stem.provenance["measured_ms"] == 0.021
    assert stem.matcher.matches(STEM) and not stem.matcher.matches(LATE)
    assert late.matcher.matches(LATE) and not late.matcher.matches(STEM)


@pytest.mark.parametrize(
    "change,line,message",
    [
        (("schema = 1", "schema = 2"), 1, "schema = 2: this dnnc reads schema 1"),
        (('mode = "append"', 'mode = "merge"'), 2, "mode = 'merge': expected one of append, replace, disable"),
        (('arch = "sm_90"', 'arch = "hopper"'), 3, "target.arch = 'hopper'"),
        (('dtype = ["f16"]', 'dtype = ["fp16"]'), 7, "match.dtype: expected some of f16, bf16, f32"),
        (('"1..14", "1..14"', '"14..1", "1..14"'), 14, "match.output: range '14..1' is empty"),
        (('"%64"', '"%0"'), 14, "match.output: '%0'"),
        (('backend = "cudnn"', 'backend = "cublas"'), 9, "decision.backend = 'cublas': expected one of cudnn, triton"),
        (("BLOCK_M = 64", "BLOCK_M = 48"), 15, "decision.config.BLOCK_M: 48 is not a power of two"),
        (("num_warps = 4", "num_warps = 3"), 15, "3 warps"),
        (('cudnn = ">=9.0,<10"', 'cudnn = "nine"'), 8, "versions.cudnn = 'nine' is not a version range"),
        (('tag = "eng32_k2=2_k6=3"', 'tag = "fast"'), 9, "decision.tag 'fast' is not a cuDNN engine tag"),
        (("provenance = {", "provenanse = {"), 10, "unknown key 'provenanse'"),
        (("measured_ms = 0.021", "measured_ms = -5"), 10, "provenance.measured_ms = -5: expected a finite, non-negative"),
        (("measured_ms = 0.021", "measured_ms = nan"), 10, "provenance.measured_ms = nan"),
        (("baseline_ms = 0.03", "baseline_ms = inf"), 10, "provenance.baseline_ms = inf"),
        (("measured_ms = 0.021", "measured_ms = true"), 10, "provenance.measured_ms = True"),
        (("BLOCK_K = 32", "BLOCK_K = 1048576"), 15, "decision.config.BLOCK_K: 1048576 is over 65536"),
    ],
)
def test_validation_errors_name_file_line_and_field(change: tuple[str, str], line: int, message: str) -> None:
    text = EXAMPLE.replace(*change)
    assert text != EXAMPLE
    with pytest.raises(SpecError) as err:
        parse_library(text, "bad.toml")
    assert str(err.value).startswith(f"bad.toml:{line}:"), str(err.value)
    assert message in str(err.value)


def test_config_for_the_wrong_backend_and_broken_toml() -> None:
    with pytest.raises(SpecError, match=r"bad.toml:9: record 'stem': decision.config does not apply to backend 'cudnn'"):
        parse_library(EXAMPLE.replace("engine = 32,", "config = { BLOCK_M = 64 },"), "bad.toml")
    with pytest.raises(SpecError, match="bad.toml: not valid TOML"):
        parse_library("schema = ", "bad.toml")
    with pytest.raises(SpecError, match="mode = 'disable' adds no records"):
        parse_library(EXAMPLE.replace('mode = "append"', 'mode = "disable"'), "bad.toml")


@pytest.mark.parametrize(
    "text,yes,no",
    [(8, [8], [7, 16]), ("*", [0, 1, 999], []), ("16..64", [16, 40, 64], [15, 65]), ("%8", [8, 64], [12]), ("..4", [0, 4], [5])],
)
def test_dimension_predicates(text: object, yes: list[int], no: list[int]) -> None:
    dim = parse_dim(text)
    assert all(dim.accepts(n) for n in yes) and not any(dim.accepts(n) for n in no)


@pytest.mark.parametrize(
    "a,b,overlap",
    [
        ({"kind": "conv*"}, {"kind": "conv_bias_relu"}, True),
        ({"kind": "conv*"}, {"kind": "matmul*"}, False),
        ({"kind": "conv", "dtype": ["f16"]}, {"kind": "conv", "dtype": ["f32"]}, False),
        ({"kind": "conv", "input": [1, "%8"]}, {"kind": "conv", "input": [1, "1..7"]}, False),
        ({"kind": "conv", "input": [1, "%8"]}, {"kind": "conv", "input": [1, "4..9"]}, True),
        ({"kind": "conv", "input": [1, "%6"]}, {"kind": "conv", "input": ["*", "%4"]}, True),
        ({"kind": "conv", "input": [1, 2]}, {"kind": "conv", "input": [1, 2, 3]}, False),
        ({"kind": "conv", "input": [1, 2]}, {"kind": "conv", "weight": [5, 5]}, True),
    ],
)
def test_overlap_is_semantic(a: dict, b: dict, overlap: bool) -> None:
    ma, mb = parse_matcher(a), parse_matcher(b)
    assert ma.overlaps(mb) is overlap and mb.overlaps(ma) is overlap


def _lib(name: str, kind: str = "conv_bias_relu", mode: str = "append", layer: str | None = None, **target: str):
    head = [f'schema = 1\nmode = "{mode}"']
    if layer:
        head.append(f'layer = "{layer}"')
    if target:
        head.append("target = { " + ", ".join(f'{k} = "{v}"' for k, v in target.items()) + " }")
    body = (
        ""
        if mode == "disable"
        else f'\n[[record]]\nname = "{name}"\nmatch = {{ kind = "{kind}" }}\ndecision = {{ backend = "cudnn", engine = 1 }}\n'
    )
    return parse_library("\n".join(head) + "\n" + body, f"{name}.toml")


def test_precedence_user_over_project_over_sku_over_arch_over_generic() -> None:
    libs = [
        ("generic", _lib("generic")),
        ("arch", _lib("arch", arch="sm_90")),
        ("sku", _lib("sku", sku="H100")),
        ("project", _lib("project")),
        ("user", _lib("user")),
    ]
    resolved = resolve(libs, H100)
    assert [r.name for r in resolved.records] == ["user", "project", "sku", "arch", "generic"]
    assert resolved.decide(STEM).name == "user"
    assert resolve(libs[:3], H100).decide(STEM).name == "sku"


def test_replace_disable_order_within_a_layer_and_the_layer_key() -> None:
    assert [r.name for r in resolve([("arch", _lib("a")), ("user", _lib("u", mode="replace"))], H100).records] == ["u"]
    assert resolve([("arch", _lib("a")), ("user", _lib("off", mode="disable"))], H100).records == []
    first, second = _lib("first"), _lib("second")
    assert [r.name for r in resolve([("user", first), ("user", second)], H100).records] == ["first", "second"]
    moved = _lib("says-generic", layer="generic")
    assert [r.name for r in resolve([("user", moved), ("arch", _lib("arch"))], H100).records] == ["arch", "says-generic"]


def test_other_targets_are_left_out_and_version_ranges_skip_with_a_warning() -> None:
    libs = [
        ("arch", _lib("ampere", arch="sm_80")),
        ("sku", _lib("h200", sku="H200")),
        ("user", parse_library(EXAMPLE, "ex.toml")),
    ]
    old = Device("sm_90", "NVIDIA H100 80GB HBM3", {"cudnn": "8.9.7", "triton": "3.6.0"})
    resolved = resolve(libs, old)
    assert [r.name for r in resolved.other_target] == ["h200", "ampere"]
    assert [r.name for r in resolved.records] == ["late convs"]
    assert resolved.warnings == ["ex.toml:5: record 'stem' skipped: needs cudnn <10,>=9.0, installed 8.9.7"]
    assert resolve(libs, H100).decide(STEM).name == "stem"


def test_a_directory_loads_every_toml_in_name_order(tmp_path: Path) -> None:
    (tmp_path / "b.toml").write_text(EXAMPLE)
    (tmp_path / "a.toml").write_text('schema = 1\nmode = "disable"\n')
    (tmp_path / "notes.txt").write_text("not a spec")
    assert [Path(lib.path).name for lib in load_library(tmp_path)] == ["a.toml", "b.toml"]
    with pytest.raises(SpecError, match="missing.toml: cannot read the tuning spec"):
        load_library(tmp_path / "missing.toml")


def test_merge_keeps_every_decision_and_reports_overlaps(tmp_path: Path) -> None:
    from dnnc.specs.merge import overlaps, to_toml

    user = parse_library(EXAMPLE, "user.toml")
    arch = _lib("arch-conv", kind="conv*", arch="sm_90")
    resolved = resolve([("user", user), ("arch", arch)], H100)
    found = overlaps(resolved.records)
    pairs = {(o.winner.name, o.loser.name, o.conflict) for o in found}
    assert ("stem", "arch-conv", True) in pairs and ("late convs", "arch-conv", True) in pairs
    assert ("stem", "late convs", True) in pairs, "conv_bias_relu 8x224x224 could also be a conv with 64k x <=14 outputs"
    merged = parse_library(to_toml(resolved.records), "merged.toml")
    assert merged.mode == "replace" and len(merged.records) == len(resolved.records)
    again = resolve([("user", merged)], H100)
    for facts in (STEM, LATE, GroupFacts("conv", "f32", {})):
        a, b = resolved.decide(facts), again.decide(facts)
        assert (a and a.decision) == (b and b.decision), facts


def test_spec_cli_verify_and_merge(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from dnnc.cli import main

    spec = tmp_path / "ex.toml"
    spec.write_text(EXAMPLE)
    target = ["--arch", "sm_90", "--gpu-name", "NVIDIA H100", "--cudnn", "9.19.0", "--triton", "3.6.0"]
    verified = CliRunner().invoke(main, ["spec", "verify", str(spec), *target])
    assert verified.exit_code == 0, verified.output
    assert "2 records, mode append" in verified.output and "2 records apply to sm_90" in verified.output
    out = tmp_path / "merged.toml"
    merged = CliRunner().invoke(main, ["spec", "merge", str(spec), "-o", str(out), *target])
    assert merged.exit_code == 0 and out.exists() and "2 records" in merged.output
    spec.write_text(EXAMPLE.replace("num_warps = 4", "num_warps = 5"))
    bad = CliRunner().invoke(main, ["spec", "verify", str(spec), *target])
    assert bad.exit_code != 0 and f"{spec}:15:" in bad.output and "5 warps" in bad.output


SHOW = """\
schema = 1
[[record]]
name = "first"
match = { kind = "conv_bias_relu", dtype = ["f16"] }
decision = { backend = "cudnn", engine = 3 }
[[record]]
name = "second"
match = { kind = "conv_bias*", weight = ["%8", "*", 1, 1] }
decision = { backend = "triton", config = { BLOCK_M = 64 } }
[[record]]
name = "again"
match = { kind = "conv_bias_relu" }
decision = { backend = "cudnn", engine = 4 }
[[record]]
name = "never"
match = { kind = "layernorm*" }
decision = { backend = "cudnn", engine = 1 }
"""


def test_spec_show_reports_each_group_shadowed_unused_and_strict(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from dnnc.cli import main

    spec = tmp_path / "show.toml"
    spec.write_text(SHOW)
    args = ["spec", "show", "dnnc.models:resnet50", "--arg", "batch=1", "--arg", "image_size=32", "--dtype", "f16"]
    args += ["--tuning-spec", str(spec), "--arch", "sm_90", "--gpu-name", "GPU", "--cudnn", "9.19.0", "--triton", "3.6.0"]
    shown = CliRunner().invoke(main, args)
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert lines[0].startswith("#0 conv_bias_relu") and "cudnn 3" in lines[0] and "record 'first'" in lines[0]
    assert any("conv_bias_add_relu -> triton BLOCK_M=64" in line and "record 'second'" in line for line in lines)
    assert any("matmul" in line and "no record" in line for line in lines)
    assert any(line.startswith("unused:") and "'never'" in line for line in lines)
    assert [line for line in lines if line.startswith("shadowed:")] == [
        f"shadowed: {spec}:10 (record 'again') matches, but an earlier record always wins"
    ]
    strict = CliRunner().invoke(main, [*args, "--strict"])
    assert strict.exit_code != 0 and "--strict:" in strict.output and "matmul_add" in strict.output.splitlines()[-1]


def test_what_cannot_be_a_spec_is_refused_by_name(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SpecError, match="holds no \\*.toml file"):
        load_library(empty)
    binary = tmp_path / "latin1.toml"
    binary.write_bytes(b"schema = 1\n# caf\xe9\n")
    with pytest.raises(SpecError, match="latin1.toml: not UTF-8 text"):
        load_library(binary)


def test_spec_verify_refuses_an_unknown_architecture(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from dnnc.cli import main

    spec = tmp_path / "s.toml"
    spec.write_text(EXAMPLE)
    result = CliRunner().invoke(main, ["spec", "verify", str(spec), "--arch", "bogus"])
    assert result.exit_code != 0 and "--arch 'bogus': expected an architecture like sm_90" in result.output
    empty = tmp_path / "none"
    empty.mkdir()
    result = CliRunner().invoke(main, ["spec", "verify", str(empty), "--arch", "sm_90"])
    assert result.exit_code != 0 and "holds no *.toml file" in result.output


VERSIONED = """\
schema = 1
[[record]]
name = "a"
match = { kind = "conv_bias_relu", dtype = ["f16"] }
versions = { cudnn = ">=9.19,<9.20" }
decision = { backend = "cudnn", engine = 3 }
[[record]]
name = "b"
match = { kind = "conv_bias", dtype = ["f16"] }
versions = { cudnn = ">=9.19,<9.20" }
decision = { backend = "cudnn", engine = 4 }
[[record]]
name = "c"
match = { kind = "layernorm" }
decision = { backend = "triton", config = { BLOCK = 1024 } }
"""


def test_spec_tools_say_what_they_could_not_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without cuDNN here and without --cudnn: merge keeps the cuDNN records and says
    their ranges were not checked (it used to drop them silently), verify fails naming
    the option; records outside a named version are skipped with one warning per reason."""
    from click.testing import CliRunner

    import dnnc.version
    from dnnc.cli import main

    real = dnnc.version.library_versions
    monkeypatch.setattr(dnnc.version, "library_versions", lambda: {**real(), "cudnn": None})
    spec = tmp_path / "v.toml"
    spec.write_text(VERSIONED)
    out = tmp_path / "merged.toml"
    merged = CliRunner().invoke(main, ["spec", "merge", str(spec), "-o", str(out), "--arch", "sm_90"])
    assert merged.exit_code == 0, merged.output
    assert "2 records need cudnn, whose version is not known here (--cudnn VERSION); they are kept" in merged.output
    assert "wrote" in merged.output and "3 records" in merged.output
    assert len(parse_library(out.read_text(), str(out)).records) == 3
    verified = CliRunner().invoke(main, ["spec", "verify", str(spec), "--arch", "sm_90"])
    assert verified.exit_code != 0 and "--cudnn VERSION" in verified.output and "not checked" in verified.output
    older = CliRunner().invoke(main, ["spec", "verify", str(spec), "--arch", "sm_90", "--cudnn", "9.18.0"])
    assert older.exit_code == 0, older.output
    assert older.output.count("warning:") == 1
    assert "2 records skipped: needs cudnn <9.20,>=9.19, installed 9.18.0" in older.output
    assert "1 records apply to sm_90" in older.output
