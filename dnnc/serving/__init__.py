"""Serving a ``.dnnc`` artifact: ``dnnc serve`` and ``deployment.application`` put it
behind Ray Serve over the KServe v2 protocol (``protocol``), gathering requests into
the artifact's buckets (``model``). Needs ``dnnc[serve]``."""
