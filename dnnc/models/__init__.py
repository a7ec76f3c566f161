"""Models defined in the repository, with random weights, for tests and examples.

Every factory returns ``(model, example_inputs)`` with the model in eval mode and
deterministic weights (seeded), so that runs are reproducible and nothing is
downloaded. BatchNorm statistics are calibrated on random data, so they are
non-trivial and keep activations well scaled (which matters for fp16).
"""

from dnnc.models.bert import bert_layer, conv_block
from dnnc.models.gpt2 import gpt2_block
from dnnc.models.mobilenet import mobilenet_v2
from dnnc.models.resnet import resnet50
from dnnc.models.vit import vit_block

FACTORIES = {
    "resnet50": resnet50,
    "mobilenet_v2": mobilenet_v2,
    "vit_block": vit_block,
    "gpt2_block": gpt2_block,
    "bert_layer": bert_layer,
    "conv_block": conv_block,
}

__all__ = ["FACTORIES", "bert_layer", "conv_block", "gpt2_block", "mobilenet_v2", "resnet50", "vit_block"]
