"""Ahead-of-time artifacts: one ``.dnnc`` file (a zip) holding a compiled program,
its weights, the choices that make loading it cheap, and what built it.

* ``archive``: the zip container and member checksums;
* ``manifest``: schema, versions, target, signature, and the compatibility policy;
* ``kernels``: Triton sources and cuDNN plans recorded, and rebuilt on load;
* ``store``: ``save_artifact`` / ``read_artifact``;
* ``target``: where a loaded artifact runs.

``dnnc.load(path)`` (``dnnc.api``) is the entry point.
"""

from dnnc.artifact.manifest import SCHEMA_VERSION
from dnnc.artifact.store import ArtifactContents, read_artifact, read_manifest, save_artifact
from dnnc.errors import ArtifactWarning

__all__ = ["SCHEMA_VERSION", "ArtifactContents", "ArtifactWarning", "read_artifact", "read_manifest", "save_artifact"]
