"""The compiler's stages as pipelines of named passes (text only: naming a pass
imports nothing).

    torch.export ──► imported ──► canonical
                                  (fold-batchnorm, simplify-shapes, fold-params,
                                   sink-transposes, simplify-shapes, fold-params,
                                   raise-ops, fold-attention-masks, dce)
                  ──► GPU form: products padded to aligned rows (gpu-aligned-products),
                                the backends' first stages (cuDNN attention when asked,
                                Triton's split-reductions), then greedy (each backend's
                                stage in turn) or partition.decide(policy) then PARTITIONED
"""

from __future__ import annotations

CANONICALIZE = (
    "fold-batchnorm,simplify-shapes,fold-params,sink-transposes,simplify-shapes,fold-params,raise-ops,fold-attention-masks,dce"
)
"""Batch norms folded into products, weights pre-computed, layout changes moved below
elementwise code where that frees one (a model's channels-last stretches joined up),
shape chains collapsed, ops written out in steps (the RMS norms of Llama-style models)
raised to one tcp op."""

CUDNN_STAGE = "cudnn-group,assign-layouts,sink-transposes,simplify-shapes,fold-params{max-growth=3.0},dce,lower-cudnn"
"""Outline cuDNN graphs, make convolutions channels-last (weights transposed, and
channel-padded where tensor cores need it, once, here: hence the growth allowed
to fold-params), cancel the transposes between graphs, lower groups to ``cudnn.graph``."""

TRITON_STAGE = "triton-fuse,dce,triton-launch-order"
"""Every tcp op left becomes part of a generated Triton kernel; a kernel that follows
another Triton kernel is marked to be launched with PDL (``triton-launch-order``)."""

TRITON_ALONE_STAGE = (
    "triton-channels-last-boundary,triton-channels-last,sink-transposes,simplify-shapes,dce,triton-conv-weights,triton-fuse,dce,"
    "triton-launch-order"
)
"""A Triton candidate timed alone, lowered as ``PARTITIONED`` lowers it in the whole
program: a convolution reads and writes its neighbours' channels-last tensors
(``triton-channels-last-boundary``)."""

PARTITIONED = (
    "assign-layouts,triton-channels-last,sink-transposes,simplify-shapes,fold-params{max-growth=3.0},dce,lower-cudnn,"
    "triton-conv-weights,triton-fuse,dce,triton-launch-order"
)
"""After ``partition`` has outlined the cuDNN groups and marked the Triton ones: the
cuDNN stage's layout and lowering passes, then Triton builds the marked kernels.
Triton convolutions hand their results on channels-last (``triton-channels-last``)
and elementwise Triton code between convolutions (a residual add and ReLU left out of
a cuDNN graph) runs channels-last like them: without ``sink-transposes`` the residual
stream stayed NCHW, and each such kernel wrote it in both layouts and read one against
the other (ResNet-50 at batch 128 on an H200: 6.8 ms, predicted 3.65). A Triton
convolution with a window that reads channels-last reads its weight channels-last too
(``triton-conv-weights``: after ``fold-params``, which would fold its transpose back)."""

STABLEHLO_CANONICALIZE = f"sink-transposes,simplify-shapes,{CANONICALIZE}"
"""Programs imported from StableHLO keep the framework's layout changes around every
convolution: they are moved past the elementwise code and cancelled first; ops the
framework wrote out in steps (softmax) are raised back to one tcp op."""

STAGES: dict[str, str] = {
    "canonical": CANONICALIZE,
    "canonical-stablehlo": STABLEHLO_CANONICALIZE,
    "gpu-merged-products": "merge-sibling-products,dce",
    "gpu-aligned-products": "pad-product-columns,dce",
    "gpu-cudnn-attention": "cudnn-attention",
    "gpu-triton-split-reductions": "split-reductions",
    "gpu-cudnn": CUDNN_STAGE,
    "gpu-triton": TRITON_STAGE,
}
