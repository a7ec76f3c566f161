"""Tuning specs: typed, versioned records that decide a group's backend and
configuration instead of the cost model (``format``: the TOML files and their
validation; ``match``: what a record's matcher accepts; ``library``: layers,
precedence and which record applies)."""

from dnnc.specs.format import SpecError, load_library, parse_library
from dnnc.specs.library import LAYERS, resolve
from dnnc.specs.match import GroupFacts

__all__ = ["LAYERS", "GroupFacts", "SpecError", "load_library", "parse_library", "resolve"]
