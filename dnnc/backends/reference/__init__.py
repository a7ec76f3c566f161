"""The CPU reference backend: executes tcp IR with torch ops. It defines what every
op means and is the oracle every other backend is tested against."""

from dnnc.backends.reference import cudnn_rules  # noqa: F401 - registers the cudnn dialect's rules
from dnnc.backends.reference.interpreter import ReferenceExecutor, evaluate_op, execute
from dnnc.backends.reference.rules import Value

__all__ = ["ReferenceExecutor", "Value", "evaluate_op", "execute"]
