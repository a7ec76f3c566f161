"""A program: a module with one entry function plus the parameters it names."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType

from dnnc.errors import IRError, ParamError
from dnnc.ir.params import ParamStore
from dnnc.ir.tcp import ParamOp
from dnnc.ir.text import parse_ir, print_ir, verify_ir
from dnnc.ir.types import describe, element_of, shape_of, torch_dtype

ENTRY = "forward"


@dataclass
class Program:
    module: ModuleOp
    params: ParamStore
    metadata: dict[str, Any] = field(default_factory=dict)
    """JSON-serialisable facts about how it was compiled (e.g. ``decisions``, the
    partitioner's record); saved with the program in an artifact."""
    base_dir: Path | None = None
    """Where relative paths in the IR (user kernels' sources and objects) start: the
    directory of the IR file it was loaded from; None for the working directory."""

    @property
    def entry(self) -> func.FuncOp:
        for op in self.module.ops:
            if isinstance(op, func.FuncOp) and op.sym_name.data == ENTRY:
                return op
        raise IRError(f"module has no func.func @{ENTRY}")

    @property
    def input_types(self) -> list[TensorType]:
        return list(self.entry.function_type.inputs.data)

    @property
    def output_types(self) -> list[TensorType]:
        return list(self.entry.function_type.outputs.data)

    def param_ops(self) -> list[ParamOp]:
        return [op for op in self.module.walk() if isinstance(op, ParamOp)]

    def verify(self, source: str = "<program>") -> None:
        """The IR verifies and every parameter it names is stored with its type."""
        verify_ir(self.module, source)
        self.entry  # noqa: B018 - raises if missing
        for op in self.param_ops():
            value = self.params[op.param_name]
            t = op.result.type
            if tuple(value.shape) != shape_of(t) or value.dtype != torch_dtype(element_of(t)):
                got = f"{list(value.shape)} {str(value.dtype).removeprefix('torch.')}"
                raise ParamError(f"parameter @{op.param_name} is stored as {got} but the IR uses {describe(t)}")

    def prune_params(self) -> None:
        """Drop stored parameters no op refers to any more."""
        self.params.keep_only(op.param_name for op in self.param_ops())

    def text(self) -> str:
        return print_ir(self.module)

    def save(self, ir_path: str | Path) -> Path:
        """Write ``x.mlir`` and its parameters ``x.safetensors``; returns the latter."""
        ir_path = Path(ir_path)
        ir_path.parent.mkdir(parents=True, exist_ok=True)
        self.prune_params()
        ir_path.write_text(self.text())
        params_path = params_path_for(ir_path)
        self.params.save(params_path)
        return params_path

    @classmethod
    def load(cls, ir_path: str | Path, params_path: str | Path | None = None) -> Program:
        ir_path = Path(ir_path)
        module = parse_ir(read_ir_text(ir_path), str(ir_path))
        params_path = Path(params_path) if params_path else params_path_for(ir_path)
        needs_params = any(isinstance(op, ParamOp) for op in module.walk())
        params = ParamStore.load(params_path) if needs_params or params_path.is_file() else ParamStore()
        program = cls(module, params, base_dir=ir_path.resolve().parent)
        program.verify(str(ir_path))
        return program


def params_path_for(ir_path: Path) -> Path:
    return ir_path.with_suffix(".safetensors")


def read_ir_text(path: Path) -> str:
    """The text of an IR file, or an IRError saying why there is none (missing, not
    readable, not UTF-8)."""
    if not path.is_file():
        raise IRError(f"IR file {path} does not exist")
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as e:
        raise IRError(f"IR file {path} cannot be read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise IRError(f"IR file {path} is not UTF-8 text (byte {e.object[e.start]:#04x} at offset {e.start})") from None
