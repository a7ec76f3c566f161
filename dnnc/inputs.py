"""Tensors from command-line specs, in iree-run-module's style:

1x3x224x224xf32=0.5        every element 0.5
2x2xi64=1,2,3,4            the given values, row-major
@image.npy                 a NumPy file (dtype and shape from the file)
1x3xf32=@values.npy        a NumPy file that must have this shape and type
1x3xf32=random             dnnc's extension: normal(0, 1) (integers: 0..9)
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import torch

from dnnc.errors import InputError
from dnnc.ir.types import UnsupportedDtypeError, element_from_name, torch_dtype

_TYPE = re.compile(r"^(?P<dims>(\d+x)*)(?P<elem>[a-z]+\d*)$")


def parse_type(text: str) -> tuple[tuple[int, ...], torch.dtype]:
    m = _TYPE.match(text)
    if not m:
        raise InputError(f"input type {text!r}: expected DIMSxTYPE like 1x3x224x224xf32")
    dims = tuple(int(d) for d in m["dims"].split("x") if d)
    try:
        return dims, torch_dtype(element_from_name(m["elem"]))
    except UnsupportedDtypeError as e:
        raise InputError(f"input type {text!r}: {e}") from None


def load_npy(path: str, mmap: bool = False) -> torch.Tensor:
    """The array in a ``.npy`` file (``mmap``: mapped, not read, for its shape and type)."""
    file = Path(path)
    if not file.is_file():
        raise InputError(f"input file {file} does not exist")
    try:
        array = np.load(file, allow_pickle=False, mmap_mode="r" if mmap else None)
    except (ValueError, OSError) as e:
        raise InputError(f"input file {file} is not a readable .npy file: {e}") from None
    if mmap:
        try:
            dtype = torch.from_numpy(np.zeros(0, dtype=array.dtype)).dtype
        except TypeError as e:
            raise InputError(f"input file {file}: {e}") from None
        return torch.empty(array.shape, dtype=dtype, device="meta")
    try:
        return torch.from_numpy(np.ascontiguousarray(array))
    except TypeError as e:
        raise InputError(f"input file {file}: {e}") from None


def input_meta(spec: str) -> torch.Tensor:
    """The shape and type ``spec`` gives, as a tensor on the meta device (no memory):
    checked against a program's signature before any input is built."""
    if spec.startswith("@"):
        return load_npy(spec[1:], mmap=True)
    type_text, sep, _ = spec.partition("=")
    if not sep:
        raise InputError(f"input {spec!r}: expected TYPE=VALUE (e.g. 1x3xf32=0.5) or @file.npy")
    shape, dtype = parse_type(type_text)
    return torch.empty(shape, dtype=dtype, device="meta")


def parse_input(spec: str, seed: int = 0) -> torch.Tensor:
    if spec.startswith("@"):
        return load_npy(spec[1:])
    type_text, sep, value = spec.partition("=")
    if not sep:
        raise InputError(f"input {spec!r}: expected TYPE=VALUE (e.g. 1x3xf32=0.5) or @file.npy")
    shape, dtype = parse_type(type_text)
    if value.startswith("@"):
        tensor = load_npy(value[1:])
        if tuple(tensor.shape) != shape or tensor.dtype != dtype:
            raise InputError(f"input {spec!r}: file holds {list(tensor.shape)} {tensor.dtype}, expected {list(shape)} {dtype}")
        return tensor
    if value == "random":
        return random_tensor(shape, dtype, torch.Generator().manual_seed(seed))
    values = [_exact_value(v.strip(), dtype, spec) for v in value.split(",")]
    if len(values) == 1:
        return torch.full(shape, values[0], dtype=dtype)
    count = int(np.prod(shape)) if shape else 1
    if len(values) != count:
        raise InputError(f"input {spec!r}: {len(values)} values given for {count} elements")
    return torch.tensor(values, dtype=dtype).reshape(shape)


def _exact_value(text: str, dtype: torch.dtype, spec: str) -> int | float | bool:
    """``text`` as a value of ``dtype``, or an error where it does not fit it: an
    integer type takes integers in its range (``1e3`` is 1000; ``1.5``, ``inf`` and
    ``nan`` are refused), a boolean 0/1/true/false, a float type any number that does
    not overflow it (``1e12`` overflows f16)."""
    name = str(dtype).removeprefix("torch.")
    if dtype == torch.bool:
        lowered = text.lower()
        if lowered in ("0", "1", "true", "false"):
            return lowered in ("1", "true")
        raise InputError(f"input {spec!r}: {text!r} is not a bool (expected 0, 1, true or false)")
    if dtype.is_floating_point:
        try:
            number = float(text)
        except ValueError:
            raise InputError(f"input {spec!r}: {text!r} is not a number, a comma-separated list, @file.npy or random") from None
        limit = torch.finfo(dtype).max
        if abs(number) > limit and "inf" not in text.lower():
            raise InputError(f"input {spec!r}: {text} does not fit {name} (largest finite value {limit:g})")
        return number
    try:
        number_int = int(text)
    except ValueError:
        number_int = _integral_float(text, name, spec)
    info = torch.iinfo(dtype)
    if not info.min <= number_int <= info.max:
        raise InputError(f"input {spec!r}: {text} does not fit {name} ([{info.min}, {info.max}])")
    return number_int


def random_tensor(
    shape: tuple[int, ...], dtype: torch.dtype, generator: torch.Generator, int_range: tuple[int, int] = (0, 10)
) -> torch.Tensor:
    """normal(0, 1) for floats, uniform integers in ``int_range`` (end exclusive), fair
    booleans; made on the generator's device."""
    device = generator.device
    if dtype.is_floating_point:
        return torch.randn(shape, generator=generator, device=device).to(dtype)
    lo, hi = (0, 2) if dtype == torch.bool else int_range
    return torch.randint(lo, hi, shape, generator=generator, device=device).to(dtype)


def random_like(example: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Fresh values shaped and typed like ``example``; integers stay within the
    example's range (token ids within the vocabulary, positions within the sequence)."""
    lo, hi = (int(example.min()), int(example.max()) + 1) if example.numel() and not example.is_floating_point() else (0, 1)
    return random_tensor(tuple(example.shape), example.dtype, generator, (lo, max(hi, lo + 1)))


def save_npy(tensor: torch.Tensor, path: str) -> None:
    path = path.removeprefix("@")
    t = tensor.detach().cpu()
    if t.dtype == torch.bfloat16:  # NumPy has no bfloat16
        t = t.float()
    np.save(path, t.numpy())


def _integral_float(text: str, name: str, spec: str) -> int:
    """``1e3`` for an integer type: a number written as a float that is an integer."""
    try:
        as_float = float(text)
    except ValueError:
        raise InputError(f"input {spec!r}: {text!r} is not a number, a comma-separated list, @file.npy or random") from None
    if not as_float.is_integer():
        raise InputError(f"input {spec!r}: {text} is not an integer, and {name} holds integers only")
    return int(as_float)
