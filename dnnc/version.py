"""The dnnc version, in one place (cache keys and artifacts record it)."""

__version__ = "0.1.0"
