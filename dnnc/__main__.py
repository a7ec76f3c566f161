"""``python -m dnnc`` is the ``dnnc`` command."""

from dnnc.cli import main

main()
