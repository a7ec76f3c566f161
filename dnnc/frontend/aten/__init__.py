"""Import rules for core ATen ops (and the composite ops export keeps before
decomposing, ``composite``), one table (``IMPORT_RULES``) filled by the modules of this
package, grouped by kind of op."""

from dnnc.frontend.aten import (  # noqa: F401  (they register rules)
    attention,
    composite,
    elementwise,
    indexing,
    nn,
    reductions,
    resample,
    selection,
    shape,
    sources,
)
from dnnc.frontend.aten.registry import IGNORED, IMPORT_RULES, bind_args

__all__ = ["IGNORED", "IMPORT_RULES", "bind_args"]
