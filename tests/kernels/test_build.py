"""Building user kernels on the CPU (no GPU needed): NVRTC and nvcc compile the
example for sm_80 and sm_90, object code is checked against the declaration,
errors name the file and line, and the cache is keyed by everything that changes
the object and never stores a failure."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dnnc import knobs
from dnnc.errors import KernelBuildError, KernelDeclarationError
from dnnc.kernels import compilers
from dnnc.kernels.declaration import Binding, PushConstant
from dnnc.kernels.entry_params import cubin_entries, ptx_entries
from dnnc.kernels.objects import kernel_objects
from dnnc.kernels.select import ranked
from tests.kernels.kernels import KERNELS_CU, simple_mul_decl

HAVE_NVRTC = compilers._nvrtc() is not None
HAVE_NVCC = compilers._nvcc() is not None
COMPILERS = [
    pytest.param("nvrtc", marks=pytest.mark.skipif(not HAVE_NVRTC, reason="NVRTC not installed (pip install nvidia-cuda-nvrtc)")),
    pytest.param("nvcc", marks=pytest.mark.skipif(not HAVE_NVCC, reason="nvcc not installed")),
]


@pytest.fixture
def fresh_cache(tmp_path: Path) -> Iterator[Path]:
    with knobs.override(cache_dir=tmp_path / "cache", cache=True):
        yield tmp_path / "cache"


@pytest.fixture(params=COMPILERS)
def compiler(request: pytest.FixtureRequest, fresh_cache: Path) -> Iterator[str]:
    with knobs.override(kernel_compiler=request.param):
        yield request.param


def test_the_example_compiles_to_ptx_and_cubins_for_sm80_and_sm90(compiler: str) -> None:
    objects = kernel_objects(simple_mul_decl())
    assert [(o.target, o.kind) for o in objects] == [("sm_80", "cubin"), ("sm_80", "ptx"), ("sm_90", "cubin"), ("sm_90", "ptx")]
    for obj in objects:
        assert compiler in obj.origin.lower()
        if obj.kind == "ptx":
            text = obj.data.decode()
            assert f".target {obj.target}" in text
            assert ptx_entries(text)["simple_mul"][3].type in ("u32", "s32", "b32")
        else:
            assert obj.data[:4] == b"\x7fELF"
            assert [p.size for p in cubin_entries(obj.data)["simple_mul"]] == [8, 8, 8, 4]


def test_compile_errors_name_the_file_and_line(compiler: str, tmp_path: Path) -> None:
    source = tmp_path / "broken.cu"
    source.write_text('extern "C" __global__ void simple_mul(float* a) {\n  a[0] = undefined_name;\n}\n')
    with pytest.raises(KernelBuildError) as caught:
        kernel_objects(simple_mul_decl(source=str(source)))
    message = str(caught.value)
    assert message.startswith(f"kernel simple_mul: {'NVRTC' if compiler == 'nvrtc' else 'nvcc'} could not compile {source} for ")
    assert f"{source}(2): error" in message and "undefined_name" in message


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"push_constants": ()},
            "sm_80 cubin object .* entry 'simple_mul' takes 4 parameters, the declaration 3 \\(bindings lhs, rhs, out\\)",
        ),
        (
            {"push_constants": (PushConstant("dim", "f32"),)},
            "entry 'simple_mul' parameter 3 is .u32, but the declaration puts push constant 'dim' \\(f32\\) there",
        ),
        (
            {"push_constants": (PushConstant("dim", "i64", "n"),)},
            "parameter 3 is (4 bytes|.u32), but the declaration puts push constant 'dim' \\(i64\\) there",
        ),
        ({"entry": "simple_mul_v2"}, "has no entry 'simple_mul_v2' \\(entries: simple_mul, simple_mul_inplace\\)"),
        (
            {"bindings": (Binding("lhs", "f32", ("n",)), Binding("out", "f32", ("n",), "write"))},
            "takes 4 parameters, the declaration 3",
        ),
    ],
)
def test_a_declaration_that_does_not_match_the_object_code_is_refused(
    compiler: str, changes: dict[str, object], message: str
) -> None:
    with pytest.raises(KernelDeclarationError, match=f"kernel simple_mul: .*{message}"):
        kernel_objects(simple_mul_decl(**changes))


def test_a_mangled_kernel_gets_a_hint_to_declare_it_extern_c(compiler: str, tmp_path: Path) -> None:
    source = tmp_path / "mangled.cu"
    source.write_text("__global__ void simple_mul(const float* a, const float* b, float* c, int n) {}\n")
    with pytest.raises(
        KernelDeclarationError, match='kernel is C\\+\\+-mangled: declare it extern "C" __global__ void simple_mul'
    ):
        kernel_objects(simple_mul_decl(source=str(source), archs=("sm_90",)))


def test_prebuilt_objects_per_target_are_read_and_checked(fresh_cache: Path, tmp_path: Path) -> None:
    if not (HAVE_NVRTC or HAVE_NVCC):
        pytest.skip("no CUDA compiler")
    ptx, _ = compilers.build(KERNELS_CU, "sm_80", "ptx")
    cubin, _ = compilers.build(KERNELS_CU, "sm_90", "cubin")
    (tmp_path / "kernels_sm_80.ptx").write_bytes(ptx)
    (tmp_path / "kernels_sm_90.cubin").write_bytes(cubin)
    decl = simple_mul_decl(source=None, archs=(), objects={"sm_80": "kernels_sm_80.ptx", "sm_90": "kernels_sm_90.cubin"})
    objects = kernel_objects(decl, base=tmp_path)
    assert [(o.target, o.kind, o.origin) for o in objects] == [
        ("sm_80", "ptx", "kernels_sm_80.ptx"),
        ("sm_90", "cubin", "kernels_sm_90.cubin"),
    ]
    assert [o.describe() for o in ranked(objects, 90)] == ["sm_90 cubin", "sm_80 ptx"]
    missing = simple_mul_decl(source=None, archs=(), objects={"sm_80": "kernels_sm_80.ptx", "sm_100": "kernels_sm_100.cubin"})
    with pytest.raises(KernelBuildError, match=f"object file {tmp_path / 'kernels_sm_100.cubin'} cannot be read"):
        kernel_objects(missing, base=tmp_path)
    (tmp_path / "garbage.cubin").write_bytes(b"not an elf")
    garbage = simple_mul_decl(source=None, archs=(), objects={"sm_90": "garbage.cubin"})
    with pytest.raises(KernelDeclarationError, match="sm_90 cubin object garbage.cubin is not a readable cubin"):
        kernel_objects(garbage, base=tmp_path)


class _Counted:
    """Counts the compiler runs behind the cache."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.runs = 0
        for name in ("_run_nvcc", "_run_nvrtc"):
            original = getattr(compilers, name)

            def counted(*args: object, _original=original) -> bytes:  # type: ignore[no-untyped-def]
                self.runs += 1
                return _original(*args)

            monkeypatch.setattr(compilers, name, counted)


def test_the_cache_is_keyed_by_everything_that_changes_the_object(
    compiler: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = _Counted(monkeypatch)
    header = tmp_path / "scale.h"
    header.write_text("#define SCALE 2.0f\n")
    source = tmp_path / "k.cu"
    source.write_text('#include "scale.h"\nextern "C" __global__ void k(float* a) { a[0] *= SCALE; }\n')

    def build(target: str = "sm_90", kind: str = "ptx", flags: tuple[str, ...] = ()) -> bytes:
        return compilers.build(source, target, kind, flags)[0]

    first = build()
    assert counted.runs == 1
    assert build() == first and counted.runs == 1  # hit
    build(target="sm_80")
    build(kind="cubin")
    build(flags=("-DEXTRA=1",))
    assert counted.runs == 4  # target, kind and flags are in the key
    header.write_text("#define SCALE 3.0f\n")
    assert build() != first and counted.runs == 5  # an included header's text is in the key
    version = compilers.compiler()
    monkeypatch.setattr(compilers, "compiler", lambda: compilers.Compiler(version.name, version.version + "-next", version.path))
    build()
    assert counted.runs == 6  # so is the compiler's version


def test_failures_are_never_cached(compiler: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counted = _Counted(monkeypatch)
    source = tmp_path / "k.cu"
    source.write_text('extern "C" __global__ void k(float* a) { a[0] = oops; }\n')
    for _ in range(2):
        with pytest.raises(KernelBuildError, match='identifier "oops" is undefined'):
            compilers.build(source, "sm_90", "ptx")
    assert counted.runs == 2
    source.write_text('extern "C" __global__ void k(float* a) { a[0] = 1.0f; }\n')
    compilers.build(source, "sm_90", "ptx")
    compilers.build(source, "sm_90", "ptx")
    assert counted.runs == 3


def test_a_missing_compiler_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compilers, "_nvcc", lambda: None)
    monkeypatch.setattr(compilers, "_nvrtc", lambda: None)
    with pytest.raises(KernelBuildError, match="no CUDA compiler for user kernels .*pip install nvidia-cuda-nvrtc"):
        kernel_objects(simple_mul_decl())
