"""Classic vision and MLP models in plain ``torch.nn``, for end-to-end tests and the benchmark.

torchvision is not a dependency, so the architectures are re-written here with torchvision's layer
structure (the same modules in the same order, so ``state_dict`` keys match torchvision's), plus
the PyTorch ONNX tutorial super-resolution net, the DCGAN pair and the MNIST net from
pytorch/examples, and an MLP that takes a tensor, a dict and a list.

``MODELS[name]()`` returns ``(model, args)``: the model in eval mode with seeded random weights and
an example argument tuple. Weights use a variance-preserving initialisation and batch-norm
running statistics are calibrated on one random batch, so activations keep unit scale through
deep nets and a numerical comparison is meaningful (not dominated by vanishing values).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

SEED = 0


# ---------------------------------------------------------------------------------------------
# AlexNet, VGG


class AlexNet(nn.Module):
    def __init__(self, num_classes: int = 1000, dropout: float = 0.5):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout),
            nn.Linear(256 * 6 * 6, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, 4096),
            nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x):
        x = self.features(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


VGG_CONFIGS = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
}


def vgg_layers(config: list, batch_norm: bool) -> nn.Sequential:
    layers: list[nn.Module] = []
    in_channels = 3
    for v in config:
        if v == "M":
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
        else:
            layers.append(nn.Conv2d(in_channels, v, kernel_size=3, padding=1))
            if batch_norm:
                layers.append(nn.BatchNorm2d(v))
            layers.append(nn.ReLU(inplace=True))
            in_channels = v
    return nn.Sequential(*layers)


class VGG(nn.Module):
    def __init__(self, features: nn.Module, num_classes: int = 1000, dropout: float = 0.5):
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096),
            nn.ReLU(True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, 4096),
            nn.ReLU(True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x):
        x = self.features(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


# ---------------------------------------------------------------------------------------------
# ResNet


def conv3x3(in_planes: int, out_planes: int, stride: int = 1, groups: int = 1, dilation: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation, groups=groups,
                     bias=False, dilation=dilation)


def conv1x1(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        width = planes
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = conv3x3(width, width, stride)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self, block, layers: list[int], num_classes: int = 1000):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2)
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2)
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)

    def _make_layer(self, block, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes * block.expansion, stride),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.fc(x)


# ---------------------------------------------------------------------------------------------
# SqueezeNet


class Fire(nn.Module):
    def __init__(self, inplanes: int, squeeze_planes: int, expand1x1_planes: int, expand3x3_planes: int):
        super().__init__()
        self.inplanes = inplanes
        self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.squeeze_activation(self.squeeze(x))
        return torch.cat(
            [self.expand1x1_activation(self.expand1x1(x)), self.expand3x3_activation(self.expand3x3(x))], 1)


class SqueezeNet(nn.Module):
    def __init__(self, version: str = "1_0", num_classes: int = 1000, dropout: float = 0.5):
        super().__init__()
        if version == "1_0":
            self.features = nn.Sequential(
                nn.Conv2d(3, 96, kernel_size=7, stride=2),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(96, 16, 64, 64),
                Fire(128, 16, 64, 64),
                Fire(128, 32, 128, 128),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(256, 32, 128, 128),
                Fire(256, 48, 192, 192),
                Fire(384, 48, 192, 192),
                Fire(384, 64, 256, 256),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(512, 64, 256, 256),
            )
        else:
            self.features = nn.Sequential(
                nn.Conv2d(3, 64, kernel_size=3, stride=2),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(64, 16, 64, 64),
                Fire(128, 16, 64, 64),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(128, 32, 128, 128),
                Fire(256, 32, 128, 128),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(256, 48, 192, 192),
                Fire(384, 48, 192, 192),
                Fire(384, 64, 256, 256),
                Fire(512, 64, 256, 256),
            )
        final_conv = nn.Conv2d(512, num_classes, kernel_size=1)
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout), final_conv, nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1)))

    def forward(self, x):
        x = self.features(x)
        x = self.classifier(x)
        return torch.flatten(x, 1)


# ---------------------------------------------------------------------------------------------
# DenseNet


class _DenseLayer(nn.Module):
    def __init__(self, num_input_features: int, growth_rate: int, bn_size: int, drop_rate: float):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(num_input_features)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, kernel_size=1, stride=1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, kernel_size=3, stride=1, padding=1, bias=False)
        self.drop_rate = float(drop_rate)

    def forward(self, inputs: list[torch.Tensor]) -> torch.Tensor:
        concated = torch.cat(inputs, 1)
        bottleneck = self.conv1(self.relu1(self.norm1(concated)))
        new_features = self.conv2(self.relu2(self.norm2(bottleneck)))
        if self.drop_rate > 0:
            new_features = F.dropout(new_features, p=self.drop_rate, training=self.training)
        return new_features


class _DenseBlock(nn.ModuleDict):
    def __init__(self, num_layers: int, num_input_features: int, bn_size: int, growth_rate: int,
                 drop_rate: float):
        super().__init__()
        for i in range(num_layers):
            layer = _DenseLayer(num_input_features + i * growth_rate, growth_rate, bn_size, drop_rate)
            self.add_module("denselayer%d" % (i + 1), layer)

    def forward(self, init_features):
        features = [init_features]
        for layer in self.values():
            features.append(layer(features))
        return torch.cat(features, 1)


class _Transition(nn.Sequential):
    def __init__(self, num_input_features: int, num_output_features: int):
        super().__init__()
        self.norm = nn.BatchNorm2d(num_input_features)
        self.relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(num_input_features, num_output_features, kernel_size=1, stride=1, bias=False)
        self.pool = nn.AvgPool2d(kernel_size=2, stride=2)


class DenseNet(nn.Module):
    def __init__(self, growth_rate: int = 32, block_config=(6, 12, 24, 16), num_init_features: int = 64,
                 bn_size: int = 4, drop_rate: float = 0, num_classes: int = 1000):
        super().__init__()
        self.features = nn.Sequential()
        self.features.add_module("conv0", nn.Conv2d(3, num_init_features, kernel_size=7, stride=2, padding=3,
                                                    bias=False))
        self.features.add_module("norm0", nn.BatchNorm2d(num_init_features))
        self.features.add_module("relu0", nn.ReLU(inplace=True))
        self.features.add_module("pool0", nn.MaxPool2d(kernel_size=3, stride=2, padding=1))
        num_features = num_init_features
        for i, num_layers in enumerate(block_config):
            block = _DenseBlock(num_layers, num_features, bn_size, growth_rate, drop_rate)
            self.features.add_module("denseblock%d" % (i + 1), block)
            num_features = num_features + num_layers * growth_rate
            if i != len(block_config) - 1:
                self.features.add_module("transition%d" % (i + 1), _Transition(num_features, num_features // 2))
                num_features = num_features // 2
        self.features.add_module("norm5", nn.BatchNorm2d(num_features))
        self.classifier = nn.Linear(num_features, num_classes)

    def forward(self, x):
        features = self.features(x)
        out = F.relu(features, inplace=True)
        out = F.adaptive_avg_pool2d(out, (1, 1))
        out = torch.flatten(out, 1)
        return self.classifier(out)


# ---------------------------------------------------------------------------------------------
# Inception v3 (torchvision's block structure; the width can be scaled down)


class BasicConv2d(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, **kwargs):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, bias=False, **kwargs)
        self.bn = nn.BatchNorm2d(out_channels, eps=0.001)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)), inplace=True)


class InceptionA(nn.Module):
    def __init__(self, in_channels: int, pool_features: int, w: Callable[[int], int]):
        super().__init__()
        self.branch1x1 = BasicConv2d(in_channels, w(64), kernel_size=1)
        self.branch5x5_1 = BasicConv2d(in_channels, w(48), kernel_size=1)
        self.branch5x5_2 = BasicConv2d(w(48), w(64), kernel_size=5, padding=2)
        self.branch3x3dbl_1 = BasicConv2d(in_channels, w(64), kernel_size=1)
        self.branch3x3dbl_2 = BasicConv2d(w(64), w(96), kernel_size=3, padding=1)
        self.branch3x3dbl_3 = BasicConv2d(w(96), w(96), kernel_size=3, padding=1)
        self.branch_pool = BasicConv2d(in_channels, pool_features, kernel_size=1)

    def forward(self, x):
        branch1x1 = self.branch1x1(x)
        branch5x5 = self.branch5x5_2(self.branch5x5_1(x))
        branch3x3dbl = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        branch_pool = self.branch_pool(F.avg_pool2d(x, kernel_size=3, stride=1, padding=1))
        return torch.cat([branch1x1, branch5x5, branch3x3dbl, branch_pool], 1)


class InceptionB(nn.Module):
    def __init__(self, in_channels: int, w: Callable[[int], int]):
        super().__init__()
        self.branch3x3 = BasicConv2d(in_channels, w(384), kernel_size=3, stride=2)
        self.branch3x3dbl_1 = BasicConv2d(in_channels, w(64), kernel_size=1)
        self.branch3x3dbl_2 = BasicConv2d(w(64), w(96), kernel_size=3, padding=1)
        self.branch3x3dbl_3 = BasicConv2d(w(96), w(96), kernel_size=3, stride=2)

    def forward(self, x):
        branch3x3 = self.branch3x3(x)
        branch3x3dbl = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        branch_pool = F.max_pool2d(x, kernel_size=3, stride=2)
        return torch.cat([branch3x3, branch3x3dbl, branch_pool], 1)


class InceptionC(nn.Module):
    def __init__(self, in_channels: int, channels_7x7: int, w: Callable[[int], int]):
        super().__init__()
        c7 = channels_7x7
        self.branch1x1 = BasicConv2d(in_channels, w(192), kernel_size=1)
        self.branch7x7_1 = BasicConv2d(in_channels, c7, kernel_size=1)
        self.branch7x7_2 = BasicConv2d(c7, c7, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7_3 = BasicConv2d(c7, w(192), kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7dbl_1 = BasicConv2d(in_channels, c7, kernel_size=1)
        self.branch7x7dbl_2 = BasicConv2d(c7, c7, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7dbl_3 = BasicConv2d(c7, c7, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7dbl_4 = BasicConv2d(c7, c7, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7dbl_5 = BasicConv2d(c7, w(192), kernel_size=(1, 7), padding=(0, 3))
        self.branch_pool = BasicConv2d(in_channels, w(192), kernel_size=1)

    def forward(self, x):
        branch1x1 = self.branch1x1(x)
        branch7x7 = self.branch7x7_3(self.branch7x7_2(self.branch7x7_1(x)))
        branch7x7dbl = self.branch7x7dbl_1(x)
        branch7x7dbl = self.branch7x7dbl_3(self.branch7x7dbl_2(branch7x7dbl))
        branch7x7dbl = self.branch7x7dbl_5(self.branch7x7dbl_4(branch7x7dbl))
        branch_pool = self.branch_pool(F.avg_pool2d(x, kernel_size=3, stride=1, padding=1))
        return torch.cat([branch1x1, branch7x7, branch7x7dbl, branch_pool], 1)


class InceptionD(nn.Module):
    def __init__(self, in_channels: int, w: Callable[[int], int]):
        super().__init__()
        self.branch3x3_1 = BasicConv2d(in_channels, w(192), kernel_size=1)
        self.branch3x3_2 = BasicConv2d(w(192), w(320), kernel_size=3, stride=2)
        self.branch7x7x3_1 = BasicConv2d(in_channels, w(192), kernel_size=1)
        self.branch7x7x3_2 = BasicConv2d(w(192), w(192), kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7x3_3 = BasicConv2d(w(192), w(192), kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7x3_4 = BasicConv2d(w(192), w(192), kernel_size=3, stride=2)

    def forward(self, x):
        branch3x3 = self.branch3x3_2(self.branch3x3_1(x))
        branch7x7x3 = self.branch7x7x3_2(self.branch7x7x3_1(x))
        branch7x7x3 = self.branch7x7x3_4(self.branch7x7x3_3(branch7x7x3))
        branch_pool = F.max_pool2d(x, kernel_size=3, stride=2)
        return torch.cat([branch3x3, branch7x7x3, branch_pool], 1)


class InceptionE(nn.Module):
    def __init__(self, in_channels: int, w: Callable[[int], int]):
        super().__init__()
        self.branch1x1 = BasicConv2d(in_channels, w(320), kernel_size=1)
        self.branch3x3_1 = BasicConv2d(in_channels, w(384), kernel_size=1)
        self.branch3x3_2a = BasicConv2d(w(384), w(384), kernel_size=(1, 3), padding=(0, 1))
        self.branch3x3_2b = BasicConv2d(w(384), w(384), kernel_size=(3, 1), padding=(1, 0))
        self.branch3x3dbl_1 = BasicConv2d(in_channels, w(448), kernel_size=1)
        self.branch3x3dbl_2 = BasicConv2d(w(448), w(384), kernel_size=3, padding=1)
        self.branch3x3dbl_3a = BasicConv2d(w(384), w(384), kernel_size=(1, 3), padding=(0, 1))
        self.branch3x3dbl_3b = BasicConv2d(w(384), w(384), kernel_size=(3, 1), padding=(1, 0))
        self.branch_pool = BasicConv2d(in_channels, w(192), kernel_size=1)

    def forward(self, x):
        branch1x1 = self.branch1x1(x)
        branch3x3 = self.branch3x3_1(x)
        branch3x3 = torch.cat([self.branch3x3_2a(branch3x3), self.branch3x3_2b(branch3x3)], 1)
        branch3x3dbl = self.branch3x3dbl_2(self.branch3x3dbl_1(x))
        branch3x3dbl = torch.cat([self.branch3x3dbl_3a(branch3x3dbl), self.branch3x3dbl_3b(branch3x3dbl)], 1)
        branch_pool = self.branch_pool(F.avg_pool2d(x, kernel_size=3, stride=1, padding=1))
        return torch.cat([branch1x1, branch3x3, branch3x3dbl, branch_pool], 1)


class Inception3(nn.Module):
    """torchvision's Inception v3 in eval mode (no aux logits); ``width`` scales every channel count."""

    def __init__(self, num_classes: int = 1000, width: float = 1.0, dropout: float = 0.5):
        super().__init__()

        def w(c: int) -> int:
            return max(8, int(c * width))

        self.Conv2d_1a_3x3 = BasicConv2d(3, w(32), kernel_size=3, stride=2)
        self.Conv2d_2a_3x3 = BasicConv2d(w(32), w(32), kernel_size=3)
        self.Conv2d_2b_3x3 = BasicConv2d(w(32), w(64), kernel_size=3, padding=1)
        self.maxpool1 = nn.MaxPool2d(kernel_size=3, stride=2)
        self.Conv2d_3b_1x1 = BasicConv2d(w(64), w(80), kernel_size=1)
        self.Conv2d_4a_3x3 = BasicConv2d(w(80), w(192), kernel_size=3)
        self.maxpool2 = nn.MaxPool2d(kernel_size=3, stride=2)
        a_out = lambda pool: w(64) + w(64) + w(96) + pool  # noqa: E731
        self.Mixed_5b = InceptionA(w(192), pool_features=w(32), w=w)
        self.Mixed_5c = InceptionA(a_out(w(32)), pool_features=w(64), w=w)
        self.Mixed_5d = InceptionA(a_out(w(64)), pool_features=w(64), w=w)
        b_in = a_out(w(64))
        self.Mixed_6a = InceptionB(b_in, w=w)
        c_in = w(384) + w(96) + b_in
        self.Mixed_6b = InceptionC(c_in, channels_7x7=w(128), w=w)
        c_out = 4 * w(192)
        self.Mixed_6c = InceptionC(c_out, channels_7x7=w(160), w=w)
        self.Mixed_6d = InceptionC(c_out, channels_7x7=w(160), w=w)
        self.Mixed_6e = InceptionC(c_out, channels_7x7=w(192), w=w)
        self.Mixed_7a = InceptionD(c_out, w=w)
        e_in = w(320) + w(192) + c_out
        self.Mixed_7b = InceptionE(e_in, w=w)
        e_out = w(320) + 4 * w(384) + w(192)
        self.Mixed_7c = InceptionE(e_out, w=w)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(p=dropout)
        self.fc = nn.Linear(e_out, num_classes)

    def forward(self, x):
        x = self.Conv2d_1a_3x3(x)
        x = self.Conv2d_2a_3x3(x)
        x = self.Conv2d_2b_3x3(x)
        x = self.maxpool1(x)
        x = self.Conv2d_3b_1x1(x)
        x = self.Conv2d_4a_3x3(x)
        x = self.maxpool2(x)
        x = self.Mixed_5b(x)
        x = self.Mixed_5c(x)
        x = self.Mixed_5d(x)
        x = self.Mixed_6a(x)
        x = self.Mixed_6b(x)
        x = self.Mixed_6c(x)
        x = self.Mixed_6d(x)
        x = self.Mixed_6e(x)
        x = self.Mixed_7a(x)
        x = self.Mixed_7b(x)
        x = self.Mixed_7c(x)
        x = self.avgpool(x)
        x = self.dropout(x)
        x = torch.flatten(x, 1)
        return self.fc(x)


# ---------------------------------------------------------------------------------------------
# MobileNetV2


def _make_divisible(v: float, divisor: int, min_value: int | None = None) -> int:
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class Conv2dNormActivation(nn.Sequential):
    def __init__(self, in_planes: int, out_planes: int, kernel_size: int = 3, stride: int = 1, groups: int = 1):
        padding = (kernel_size - 1) // 2
        super().__init__(
            nn.Conv2d(in_planes, out_planes, kernel_size, stride, padding, groups=groups, bias=False),
            nn.BatchNorm2d(out_planes),
            nn.ReLU6(inplace=True),
        )


class InvertedResidual(nn.Module):
    def __init__(self, inp: int, oup: int, stride: int, expand_ratio: int):
        super().__init__()
        self.stride = stride
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers: list[nn.Module] = []
        if expand_ratio != 1:
            layers.append(Conv2dNormActivation(inp, hidden_dim, kernel_size=1))
        layers.extend([
            Conv2dNormActivation(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim),
            nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False),
            nn.BatchNorm2d(oup),
        ])
        self.conv = nn.Sequential(*layers)
        self.out_channels = oup

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, num_classes: int = 1000, width_mult: float = 1.0, round_nearest: int = 8,
                 dropout: float = 0.2):
        super().__init__()
        input_channel = 32
        last_channel = 1280
        settings = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2],
                    [6, 320, 1, 1]]
        input_channel = _make_divisible(input_channel * width_mult, round_nearest)
        self.last_channel = _make_divisible(last_channel * max(1.0, width_mult), round_nearest)
        features: list[nn.Module] = [Conv2dNormActivation(3, input_channel, stride=2)]
        for t, c, n, s in settings:
            output_channel = _make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                features.append(InvertedResidual(input_channel, output_channel, s if i == 0 else 1, t))
                input_channel = output_channel
        features.append(Conv2dNormActivation(input_channel, self.last_channel, kernel_size=1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(self.last_channel, num_classes))

    def forward(self, x):
        x = self.features(x)
        x = F.adaptive_avg_pool2d(x, (1, 1))
        x = torch.flatten(x, 1)
        return self.classifier(x)


# ---------------------------------------------------------------------------------------------
# Super-resolution (PyTorch ONNX tutorial), DCGAN (pytorch/examples), MNIST (pytorch/examples)


class SuperResolutionNet(nn.Module):
    def __init__(self, upscale_factor: int = 3, inplace: bool = False):
        super().__init__()
        self.relu = nn.ReLU(inplace=inplace)
        self.conv1 = nn.Conv2d(1, 64, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(64, 64, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(64, 32, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(32, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        return self.pixel_shuffle(self.conv4(x))


class DCGANGenerator(nn.Module):
    def __init__(self, nz: int = 100, ngf: int = 64, nc: int = 3):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 8),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, input):
        return self.main(input)


class DCGANDiscriminator(nn.Module):
    def __init__(self, nc: int = 3, ndf: int = 64):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 4),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 8),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, input):
        output = self.main(input)
        return output.view(-1, 1).squeeze(1)


class MNISTNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


class MLPDictList(nn.Module):
    """An MLP whose forward takes a tensor, a dict of tensors and a list of tensors (the dict is not
    the last argument, so export passes it positionally instead of reading it as keyword arguments)."""

    def __init__(self, features: int = 16, hidden: int = 32, out: int = 8):
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, out)

    def forward(self, x, extras: dict, items: list):
        h = torch.relu(self.fc1(x)) * extras["scale"] + extras["shift"]
        for item in items:
            h = h + torch.relu(self.fc1(item))
        h = torch.relu(self.fc2(h))
        return self.fc3(h)


# ---------------------------------------------------------------------------------------------
# Factories


def init_weights(model: nn.Module, seed: int = SEED) -> None:
    """Variance-preserving random weights: convolutions and linears He-normal (fan in), biases small,
    batch-norm affine parameters near identity."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.Conv2d, nn.ConvTranspose2d, nn.Linear)):
                weight = module.weight
                if isinstance(module, nn.ConvTranspose2d):
                    # weight (in, out / groups, kH, kW); each output sums in / stride^2 taps
                    fan_in = weight.shape[0] * weight[0, 0].numel() // max(1, module.stride[0] * module.stride[1])
                else:
                    fan_in = weight[0].numel()
                std = (2.0 / max(1, fan_in)) ** 0.5
                weight.copy_(torch.randn(weight.shape, generator=generator) * std)
                if module.bias is not None:
                    module.bias.copy_(torch.randn(module.bias.shape, generator=generator) * 0.05)
            elif isinstance(module, nn.BatchNorm2d):
                module.weight.copy_(1.0 + 0.1 * torch.randn(module.weight.shape, generator=generator))
                module.bias.copy_(0.1 * torch.randn(module.bias.shape, generator=generator))


def calibrate_batch_norm(model: nn.Module, example: torch.Tensor, seed: int = SEED) -> None:
    """Set running statistics to the exact statistics of one random batch (like real trained stats,
    so eval-mode activations stay at unit scale), then switch to eval mode."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if norms:
        generator = torch.Generator().manual_seed(seed + 1)
        batch = torch.randn((2,) + tuple(example.shape[1:]), generator=generator)
        saved = [m.momentum for m in norms]
        for m in norms:
            m.reset_running_stats()
            m.momentum = None  # cumulative average: one batch gives exactly its statistics
        model.train()
        with torch.no_grad():
            model(batch)
        for m, momentum in zip(norms, saved):
            m.momentum = momentum
    model.eval()


def _image(batch: int, channels: int, size: int, seed: int = SEED) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed + 2)
    return torch.randn(batch, channels, size, size, generator=generator)


def _vision(build: Callable[[], nn.Module], batch: int, channels: int, size: int):
    def factory():
        torch.manual_seed(SEED)
        model = build()
        init_weights(model)
        x = _image(batch, channels, size)
        calibrate_batch_norm(model, x)
        return model, (x,)

    return factory


def _dcgan_generator():
    torch.manual_seed(SEED)
    model = DCGANGenerator()
    init_weights(model)
    generator = torch.Generator().manual_seed(SEED + 2)
    z = torch.randn(2, 100, 1, 1, generator=generator)
    calibrate_batch_norm(model, z)
    return model, (z,)


def _mlp_dict_list():
    torch.manual_seed(SEED)
    model = MLPDictList()
    init_weights(model)
    model.eval()
    generator = torch.Generator().manual_seed(SEED + 2)

    def randn(*shape):
        return torch.randn(*shape, generator=generator)

    x = randn(2, 16)
    extras = {"scale": randn(2, 32), "shift": randn(32)}
    items = [randn(2, 16), randn(2, 16)]
    return model, (x, extras, items)


# Input sizes: 224 where adaptive pooling must be the identity (AlexNet, VGG) and for ResNet-18 (an
# ImageNet-sized example); otherwise the smallest size that keeps every stage non-trivial (the last
# stage at least 2x2; Inception's last blocks at 3x3, so its padded average pools still see
# borders), which keeps end-to-end tests fast.
MODELS: dict[str, Callable[[], tuple[nn.Module, tuple]]] = {
    "alexnet": _vision(AlexNet, 1, 3, 224),
    "vgg11": _vision(lambda: VGG(vgg_layers(VGG_CONFIGS["A"], False)), 1, 3, 224),
    "vgg11_bn": _vision(lambda: VGG(vgg_layers(VGG_CONFIGS["A"], True)), 1, 3, 224),
    "vgg16": _vision(lambda: VGG(vgg_layers(VGG_CONFIGS["D"], False)), 1, 3, 224),
    "vgg16_bn": _vision(lambda: VGG(vgg_layers(VGG_CONFIGS["D"], True)), 1, 3, 224),
    "resnet18": _vision(lambda: ResNet(BasicBlock, [2, 2, 2, 2]), 1, 3, 224),
    "resnet50": _vision(lambda: ResNet(Bottleneck, [3, 4, 6, 3]), 1, 3, 96),
    "squeezenet1_0": _vision(lambda: SqueezeNet("1_0"), 1, 3, 96),
    "squeezenet1_1": _vision(lambda: SqueezeNet("1_1"), 1, 3, 96),
    "densenet121": _vision(DenseNet, 1, 3, 64),
    "inception_v3": _vision(Inception3, 1, 3, 139),
    "mobilenet_v2": _vision(MobileNetV2, 1, 3, 96),
    "super_resolution": _vision(SuperResolutionNet, 1, 1, 96),
    "dcgan_generator": _dcgan_generator,
    "dcgan_discriminator": _vision(DCGANDiscriminator, 2, 3, 64),
    "mnist": _vision(MNISTNet, 2, 1, 28),
    "mlp_dict_list": _mlp_dict_list,
}
