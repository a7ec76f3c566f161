"""Every command over bad input of every kind: a missing or wrong file, a model that
is not one, bad options and values, damaged artifacts, IR and specs. Each ends with
exit status 1 or 2 and dnnc's own message, never a Python traceback (CliRunner would
hand an escaping exception back as ``result.exception``)."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.test_cli import MODEL, invoke

Case = Callable[[Path], list[str]]


def _file(tmp: Path, name: str, text: str | bytes) -> str:
    path = tmp / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return str(path)


def _model(tmp: Path) -> str:
    return _file(tmp, "model.py", MODEL)


def _factory(tmp: Path, body: str) -> str:
    """``file.py:f`` for a factory ``f`` whose body is ``body``."""
    return _file(tmp, "factory.py", f"def f():\n    {body}\n") + ":f"


def _artifact(tmp: Path) -> str:
    out = tmp / "tiny.dnnc"
    if not out.exists():
        result = invoke("compile", f"{_model(tmp)}:tiny", "-o", str(out), "--device", "cpu")
        assert result.exit_code == 0, result.output
    return str(out)


def _zip(tmp: Path, members: dict[str, bytes]) -> str:
    path = tmp / "crafted.dnnc"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return str(path)


IR = "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %y = tcp.relu %x : tensor<4xf32>\n  func.return %y : tensor<4xf32>\n}\n"

CASES: dict[str, Case] = {
    # compile / ops / explain: the model argument
    "compile-missing-file": lambda t: ["compile", str(t / "nope.py:f"), "-o", str(t / "o.mlir")],
    "compile-missing-factory": lambda t: ["compile", f"{_model(t)}:nope", "-o", str(t / "o.mlir")],
    "compile-factory-raises": lambda t: ["compile", _factory(t, 'raise RuntimeError("boom")'), "-o", str(t / "o.mlir")],
    "compile-factory-not-a-model": lambda t: ["compile", _factory(t, "return 42"), "-o", str(t / "o.mlir")],
    "compile-syntax-error": lambda t: ["compile", _factory(t, "return (("), "-o", str(t / "o.mlir")],
    "compile-bad-arg": lambda t: ["compile", f"{_model(t)}:tiny", "--arg", "batch", "-o", str(t / "o.mlir")],
    "compile-unknown-arg": lambda t: ["compile", f"{_model(t)}:tiny", "--arg", "colour=3", "-o", str(t / "o.mlir")],
    "compile-bad-dtype": lambda t: ["compile", f"{_model(t)}:tiny", "--dtype", "f8", "-o", str(t / "o.mlir")],
    "compile-output-is-a-directory": lambda t: ["compile", f"{_model(t)}:tiny", "-o", str(t)],
    "compile-output-under-a-file": lambda t: ["compile", f"{_model(t)}:tiny", "-o", f"{_model(t)}/x.dnnc"],
    "compile-bad-partition": lambda t: ["compile", f"{_model(t)}:tiny", "--partition", "fastest", "-o", str(t / "o.mlir")],
    "ops-check-missing-model": lambda t: ["ops", "--check", str(t / "nope.py:f")],
    "explain-missing-model": lambda t: ["explain", str(t / "nope.py:f")],
    # run: the program and its inputs
    "run-missing-file": lambda t: ["run", str(t / "nope.dnnc")],
    "run-not-a-zip": lambda t: ["run", _file(t, "x.dnnc", b"not a zip at all")],
    "run-zip-without-manifest": lambda t: ["run", _zip(t, {"program.mlir": b"x"})],
    "run-manifest-not-json": lambda t: ["run", _zip(t, {"manifest.json": b"{", "program.mlir": b"x"})],
    "run-bad-input-value": lambda t: ["run", _artifact(t), "--input=3x3x6x6xf32=abc"],
    "run-bad-input-dtype": lambda t: ["run", _artifact(t), "--input=3x3x6x6xq9=1"],
    "run-huge-input": lambda t: ["run", _artifact(t), "--input=99999999x99999999xf32=0"],
    "run-wrong-shape": lambda t: ["run", _artifact(t), "--input=2x3xf32=1"],
    "run-too-many-inputs": lambda t: ["run", _artifact(t), "--input=2x3x6x6xf32=1", "--input=1xf32=1"],
    "run-integer-not-exact": lambda t: ["run", _artifact(t), "--input=4xi32=1.5"],
    "run-integer-inf": lambda t: ["run", _artifact(t), "--input=4xi32=inf"],
    "run-npy-missing": lambda t: ["run", _artifact(t), f"--input=@{t / 'nope.npy'}"],
    "run-npy-corrupt": lambda t: ["run", _artifact(t), f"--input=@{_file(t, 'x.npy', b'garbage')}"],
    "run-output-is-a-directory": lambda t: ["run", _artifact(t), "--input=3x3x6x6xf32=1", f"--output={t}"],
    "run-bad-device": lambda t: ["run", _artifact(t), "--device", "tpu"],
    "run-ir-bad-text": lambda t: ["run", _file(t, "x.mlir", "func.func @main( {"), "--input=4xf32=1"],
    "run-ir-unknown-op": lambda t: ["run", _file(t, "x.mlir", IR.replace("tcp.relu", "tcp.frobnicate")), "--input=4xf32=1"],
    "run-ir-not-utf8": lambda t: ["run", _file(t, "x.mlir", b"\xff\xfe\x00bad"), "--input=4xf32=1"],
    "run-import-missing": lambda t: ["run", _artifact(t), "--import", str(t / "nope.py")],
    # inspect / bench
    "inspect-not-an-artifact": lambda t: ["inspect", _file(t, "x.dnnc", b"PK\x03\x04 truncated")],
    "bench-missing-file": lambda t: ["bench", str(t / "nope.dnnc")],
    # opt
    "opt-unknown-pass": lambda t: ["opt", _file(t, "x.mlir", IR), "-p", "make-it-fast"],
    "opt-bad-pass-option": lambda t: ["opt", _file(t, "x.mlir", IR), "-p", "partition{policy=bogus}"],
    "opt-missing-file": lambda t: ["opt", str(t / "nope.mlir"), "-p", "dce"],
    "opt-not-utf8": lambda t: ["opt", _file(t, "x.mlir", b"\xff\xfe\x00bad"), "-p", "dce"],
    # spec
    "spec-verify-missing-path": lambda t: ["spec", "verify", str(t / "nope.toml"), "--arch", "sm_90"],
    "spec-verify-bad-arch": lambda t: ["spec", "verify", _file(t, "s.toml", "schema = 1\n"), "--arch", "bogus"],
    "spec-verify-not-toml": lambda t: ["spec", "verify", _file(t, "s.toml", "schema = [[[\n"), "--arch", "sm_90"],
    "spec-verify-not-utf8": lambda t: ["spec", "verify", _file(t, "s.toml", b"\xff\xfeschema"), "--arch", "sm_90"],
    "spec-verify-nan-time": lambda t: [
        "spec",
        "verify",
        _file(
            t,
            "s.toml",
            'schema = 1\n[[record]]\nmatch = { kind = "conv" }\ndecision = { backend = "cudnn", engine = 1 }\n'
            "provenance = { measured_ms = nan }\n",
        ),
        "--arch",
        "sm_90",
    ],
    "spec-merge-output-is-a-directory": lambda t: [
        "spec",
        "merge",
        _file(t, "s.toml", "schema = 1\n"),
        "-o",
        str(t),
        "--arch",
        "sm_90",
    ],
    "spec-show-missing-model": lambda t: [
        "spec",
        "show",
        str(t / "nope.py:f"),
        "--tuning-spec",
        _file(t, "s.toml", "schema = 1\n"),
    ],
    # settings
    "unknown-command": lambda t: ["frobnicate"],
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_bad_input_is_one_dnnc_message_not_a_traceback(case: str, tmp_path: Path) -> None:
    args = CASES[case](tmp_path)
    result = invoke(*args)
    assert result.exit_code in (1, 2), f"{case}: exit {result.exit_code}\n{result.output}"
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{case}: {type(result.exception).__name__} escaped: {result.exception}"
    )
    assert "Traceback" not in result.output, result.output
    assert result.output.strip(), f"{case}: failed without saying why"
