"""The artifact commands on the CPU: compile -o model.dnnc, run, bench, inspect,
and their errors (one clear line, exit code 1, no traceback)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.cli.test_cli import MODEL, invoke, model_file  # noqa: F401 - model_file is a fixture


@pytest.fixture
def artifact(model_file: Path, tmp_path: Path) -> Path:  # noqa: F811
    out = tmp_path / "build" / "tiny.dnnc"
    result = invoke("compile", f"{model_file}:tiny", "-o", str(out), "--device", "cpu", "--batch", "3")
    assert result.exit_code == 0, result.output
    for expected in ("signature: 3x3x6x6xf32 -> 3x5xf32", "target cpu", "matches PyTorch eager"):
        assert expected in result.output
    return out


def _eager(x: torch.Tensor) -> torch.Tensor:
    namespace: dict = {}
    exec(MODEL, namespace)
    model, _ = namespace["tiny"]()
    with torch.no_grad():
        return model(x)


def test_run_artifact_with_npy_input(artifact: Path, tmp_path: Path, rng: torch.Generator) -> None:
    x = torch.randn(3, 3, 6, 6, generator=rng)
    np.save(tmp_path / "x.npy", x.numpy())
    result = invoke("run", str(artifact), f"--input=@{tmp_path / 'x.npy'}", f"--output={tmp_path / 'y.npy'}")
    assert result.exit_code == 0, result.output
    assert "result[0]: 3x5xf32" in result.output
    torch.testing.assert_close(torch.from_numpy(np.load(tmp_path / "y.npy")), _eager(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "args,message",
    [
        (["--input=2x3x6x6xf32=0.5"], "input 0: expected shape [3, 3, 6, 6], got [2, 3, 6, 6]"),
        (["--input=3x3x6x6xf32=0.5", "--output=a.npy", "--output=b.npy"], "2 --output files given for 1 outputs"),
        (["--input=3x3x6x6xf32=0.5", "--params=w.safetensors"], "--params applies to IR files"),
        (["--input=3x3x6x6xf32=0.5", "--device=cuda"], "compiled for the CPU reference backend"),
    ],
)
def test_run_artifact_errors(artifact: Path, args: list[str], message: str) -> None:
    result = invoke("run", str(artifact), *args)
    assert result.exit_code == 1 and message in result.output, result.output
    assert "Traceback" not in result.output


def test_bench_on_the_cpu_says_so(artifact: Path) -> None:
    result = invoke("bench", str(artifact), "--iterations", "3", "--warmup", "1")
    assert result.exit_code == 0, result.output
    for expected in (
        "backend: CPU reference backend",
        "latency: p50 ",
        " ms, p90 ",
        " ms, p99 ",
        "over 3 calls",
        "items/s (batch 3)",
        "peak memory:",
    ):
        assert expected in result.output


def test_bench_json_has_the_percentiles_and_every_call(artifact: Path) -> None:
    import json

    result = invoke("bench", str(artifact), "--iterations", "5", "--warmup", "1", "--json")
    assert result.exit_code == 0, result.output
    facts = json.loads(result.output)
    assert facts["iterations"] == 5 and len(facts["times_ms"]) == 5 and facts["batch"] == 3
    ms = facts["ms"]
    assert ms["min"] <= ms["p50"] <= ms["p90"] <= ms["p99"] <= ms["max"]
    assert facts["device"].startswith("CPU reference backend")


def test_percentiles_interpolate_between_the_nearest_calls() -> None:
    from dnnc.runtime.bench import percentile

    times = [4.0, 1.0, 3.0, 2.0, 5.0]
    assert [percentile(times, q) for q in (0, 50, 90, 100)] == [1.0, 3.0, 4.6, 5.0]
    assert percentile([7.0], 99) == 7.0


def test_inspect(artifact: Path) -> None:
    result = invoke("inspect", str(artifact))
    assert result.exit_code == 0, result.output
    for expected in (
        "format dnnc-artifact schema 1",
        "target: cpu",
        "inputs: input [3, 3, 6, 6] float32",
        "outputs: output_0 [3, 5] float32",
        "ops by backend: tcp ",
        "memory plan peak: none (reference backend)",
        "decisions: none recorded",
    ):
        assert expected in result.output, result.output


def test_inspect_shows_decisions_as_json(tmp_path: Path, rng: torch.Generator) -> None:
    import dnnc

    compiled = dnnc.compile(torch.nn.Linear(4, 2).eval(), (torch.randn(3, 4, generator=rng),), device="cpu")
    compiled.program.metadata["decisions"] = [{"group": 0, "chose": "cudnn", "predicted_ms": 0.25}]
    path = compiled.save(tmp_path / "lin.dnnc")
    result = invoke("inspect", str(path), "--json")
    assert result.exit_code == 0, result.output
    facts = json.loads(result.output)
    assert facts["decisions"] == [{"group": 0, "chose": "cudnn", "predicted_ms": 0.25}]
    assert facts["inputs"] == ["[3, 4] float32"] and facts["manifest"]["target"] == "cpu"
    assert facts["input_names"] == ["input"] and facts["output_names"] == ["output_0"]


class _Named(torch.nn.Module):
    def forward(self, image: torch.Tensor, scale: torch.Tensor) -> dict[str, object]:
        return {"logits": image.sum(1) * scale, "hidden": (image * 2, image - 1)}


def test_inputs_and_outputs_are_named_as_the_model_names_them(tmp_path: Path, rng: torch.Generator) -> None:
    """The forward's argument names, and each output's place in what it returns (a
    server maps its request and response fields by them)."""
    import dnnc

    compiled = dnnc.compile(_Named(), (torch.randn(2, 3, generator=rng), torch.randn(2, generator=rng)), device="cpu")
    result = invoke("inspect", str(compiled.save(tmp_path / "named.dnnc")), "--json")
    assert result.exit_code == 0, result.output
    facts = json.loads(result.output)
    assert facts["input_names"] == ["image", "scale"]
    assert facts["output_names"] == ["logits", "hidden.0", "hidden.1"]
    text = invoke("inspect", str(tmp_path / "named.dnnc")).output
    assert "inputs: image [2, 3] float32, scale [2] float32" in text
    assert "outputs: logits [2] float32, hidden.0 [2, 3] float32, hidden.1 [2, 3] float32" in text


def test_inspect_and_bench_refuse_damaged_files(artifact: Path) -> None:
    artifact.write_bytes(artifact.read_bytes()[:200])
    for command in ("inspect", "bench", "run"):
        result = invoke(command, str(artifact))
        assert result.exit_code == 1 and "is not a readable zip archive" in result.output, result.output
        assert "Traceback" not in result.output


def test_compile_casts_to_the_dtype_asked_for(model_file: Path, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "tiny16.dnnc"
    result = invoke("compile", f"{model_file}:tiny", "-o", str(out), "--device", "cpu", "--dtype", "f16", "--no-check")
    assert result.exit_code == 0, result.output
    assert "signature: 2x3x6x6xf16 -> 2x5xf16" in result.output and out.is_file()


HOSTILE = {
    "created": "[/]\x1b[2J\x1b[1;1H",  # a lone closing tag; clear the screen
    "versions": {"torch\x1b]0;title\x07": "[bold red]x[/]", ":thumbs_up:": "\u202eevil"},
    "summary": {
        "device_name": "GPU [link=file:///etc]x[/link]\r",
        "memory_peak_bytes": None,
        "fallbacks": [{"backend": "[/]", "kind": "\x9b31m", "reason": "a\\"}],
        "user_kernels": {},
    },
}


def _hostile(path: Path, metadata: dict) -> None:
    """Rewrite the artifact with strings that a terminal or rich would act on."""
    import hashlib
    import zipfile

    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    members["metadata.json"] = json.dumps(metadata).encode()
    manifest = json.loads(members["manifest.json"]) | HOSTILE
    manifest["members"]["metadata.json"] = hashlib.sha256(members["metadata.json"]).hexdigest()
    members["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)


def test_inspect_prints_what_the_file_says_literally(artifact: Path) -> None:
    _hostile(artifact, {"decisions": [{"why": "[bold]\x1b[31mred[/]", "model": "\u202e:smile:"}]})
    result = invoke("inspect", str(artifact))
    assert result.exit_code == 0, result.output
    assert not any(c in result.output for c in "\x1b\x07\x9b\r\u202e"), repr(result.output)
    for expected in (
        r"created [/]\x1b[2J\x1b[1;1H)",
        r"versions: :thumbs_up: \u202eevil, torch\x1b]0;title\x07 [bold red]x[/]",
        r"target: cpu (GPU [link=file:///etc]x[/link]\r)",
        "fallback: [/] group \\x9b31m: a\\\n",  # the reason's one backslash, as it is
        r'"why": "[bold]\u001b[31mred[/]"',
        r'"model": "\u202e:smile:"',
    ):
        assert expected in result.output, result.output


def test_inspect_json_escapes_control_characters(artifact: Path) -> None:
    metadata = {"decisions": [{"why": "[/]\x1b[31m\u202e"}]}
    _hostile(artifact, metadata)
    result = invoke("inspect", str(artifact), "--json")
    assert result.exit_code == 0, result.output
    assert not any(c in result.output for c in "\x1b\x07\x9b\r\u202e"), repr(result.output)
    facts = json.loads(result.output)
    assert facts["decisions"] == metadata["decisions"]
    assert facts["manifest"]["created"] == HOSTILE["created"] and facts["versions"] == HOSTILE["versions"]


def test_errors_quoting_the_file_print_control_characters_escaped(artifact: Path) -> None:
    import hashlib
    import zipfile

    with zipfile.ZipFile(artifact) as z:
        members = {n: z.read(n) for n in z.namelist()}
    members["program.mlir"] = b"func.func @forward(\x1b[2J\x1b]0;pwned\x07) {\n}\n"
    manifest = json.loads(members["manifest.json"])
    manifest["members"]["program.mlir"] = hashlib.sha256(members["program.mlir"]).hexdigest()
    members["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(artifact, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    for command in ("inspect", "run"):
        result = invoke(command, str(artifact))
        assert result.exit_code == 1 and "program.mlir" in result.output, result.output
        assert "\x1b" not in result.output and "\x07" not in result.output, repr(result.output)
        assert "Traceback" not in result.output


@pytest.mark.gpu
def test_compile_on_the_gpu_says_what_the_program_holds(model_file: Path, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "tiny.dnnc"
    result = invoke("compile", f"{model_file}:tiny", "-o", str(out), "--device", "cuda", "--batch", "3")
    assert result.exit_code == 0, result.output
    held = re.search(
        r"device memory held: weights (\S+) MB, cuDNN workspaces (\S+) MB, intermediates' arena (\S+) MB", result.output
    )
    assert held is not None and all(float(held[i]) >= 0 for i in (1, 2, 3)), result.output
    assert "memory plan peak" in result.output
