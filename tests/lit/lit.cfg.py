"""lit configuration: textual IR tests with RUN and CHECK lines.

%dnnc runs the dnnc command of the interpreter running the tests, so the suite
works whether or not a virtual environment's bin directory is on PATH.
"""

import os
import sys

import lit.formats

config.name = "dnnc"  # noqa: F821 - lit injects `config`
config.test_format = lit.formats.ShTest()  # noqa: F821
config.suffixes = [".mlir"]  # noqa: F821
config.test_source_root = os.path.dirname(__file__)  # noqa: F821
# lit starts tests with a clean environment: keep what finds the interpreter and dnnc
# (PYTHONPATH matters when dnnc runs from a source tree rather than an install).
for name in ("PATH", "PYTHONPATH", "HOME"):
    if name in os.environ:
        config.environment[name] = os.environ[name]  # noqa: F821
config.environment["PYTHONWARNINGS"] = "ignore"  # noqa: F821
config.substitutions.append(("%dnnc", f"{sys.executable} -m dnnc"))  # noqa: F821
config.substitutions.append(("%filecheck", f"{sys.executable} -m filecheck"))  # noqa: F821
