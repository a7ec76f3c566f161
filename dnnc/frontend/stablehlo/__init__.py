"""Import StableHLO (from ``jax.jit(...).lower(...)``, ``jax.export``, or a text or
bytecode file) into tcp. Parsing is MLIR's own, through jaxlib's bindings."""

from dnnc.frontend.stablehlo.importer import import_module, import_stablehlo, read_module

__all__ = ["import_module", "import_stablehlo", "read_module"]
