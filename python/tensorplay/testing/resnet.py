"""ResNet-18 (torchvision's layout: a 7x7 stem, four stages of two BasicBlocks, global
average pooling and a linear classifier), written against a library module (tensorplay or
torch) so tests and benchmarks run the same program on both."""


def resnet18(lib, num_classes=1000, width=64):
    """``width`` scales the channels (64 is ResNet-18 proper)."""
    nn = lib.nn

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                                nn.BatchNorm2d(cout))

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + identity)

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            w = width
            self.conv1 = nn.Conv2d(3, w, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(w)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            chans = [w, 2 * w, 4 * w, 8 * w]
            layers, cin = [], w
            for i, c in enumerate(chans):
                stride = 1 if i == 0 else 2
                layers.append(nn.Sequential(BasicBlock(cin, c, stride), BasicBlock(c, c, 1)))
                cin = c
            self.layer1, self.layer2, self.layer3, self.layer4 = layers
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(8 * w, num_classes)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(lib.flatten(self.avgpool(x), 1))

    return ResNet()
