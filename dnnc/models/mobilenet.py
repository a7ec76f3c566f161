"""A MobileNetV2-style network: inverted residuals with depthwise convolutions and ReLU6."""

from __future__ import annotations

import torch
from torch import nn

from dnnc.models._init import calibrate_batchnorm, randomize_norm_affine, seeded

# (expansion t, output channels c, repeats n, first stride s), as in the MobileNetV2 paper.
_SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))


def _conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1, act: bool = True) -> nn.Sequential:
    layers: list[nn.Module] = [
        nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
    ]
    if act:
        layers.append(nn.ReLU6(inplace=True))
    return nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        layers: list[nn.Module] = []
        if expand != 1:
            layers.append(_conv_bn(cin, hidden, 1))
        layers += [_conv_bn(hidden, hidden, 3, stride, groups=hidden), _conv_bn(hidden, cout, 1, act=False)]
        self.conv = nn.Sequential(*layers)
        self.use_residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.conv(x)
        return x + out if self.use_residual else out


def _round_channels(c: float) -> int:
    return max(8, int(c + 4) // 8 * 8)


class MobileNetV2(nn.Module):
    def __init__(self, width_mult: float = 1.0, num_classes: int = 1000):
        super().__init__()
        cin = _round_channels(32 * width_mult)
        last = _round_channels(1280 * max(1.0, width_mult))
        features: list[nn.Module] = [_conv_bn(3, cin, 3, 2)]
        for t, c, n, s in _SETTINGS:
            cout = _round_channels(c * width_mult)
            for i in range(n):
                features.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
                cin = cout
        features.append(_conv_bn(cin, last, 1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        x = nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.classifier(x)


def mobilenet_v2(
    batch: int = 1, image_size: int = 224, width_mult: float = 1.0, seed: int = 0
) -> tuple[nn.Module, tuple[torch.Tensor]]:
    """MobileNetV2-style net (depthwise 3x3 convs, ReLU6), random weights, calibrated BN."""
    with seeded(seed):
        model = MobileNetV2(width_mult)
        randomize_norm_affine(model)
        calibrate_batchnorm(model, torch.empty(2, 3, 112, 112))
        example = torch.randn(batch, 3, image_size, image_size)
    return model.eval(), (example,)
