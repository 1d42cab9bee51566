#!/usr/bin/python3
"""The peer of `shoal train` on examples/fashion_mnist.yaml: the same SimpleCNN (conv1, max pool,
bn1, ReLU; conv2, max pool, bn2, ReLU; fc1 128 with dropout 0.25; fc2), Adam lr 1e-3, batch 128,
train on ids < 54000, validate on the rest each epoch, test at the end, in Python PyTorch.

    train_peer.py TRAIN.bin TEST.bin --mean M --std S --epochs N --mode png|memory [--workers 2]

png: a DataLoader with `workers` processes decodes the PNG bytes with PIL each epoch.
memory: the images are decoded once before the clock starts, and batches are sliced from tensors.
Prints one JSON line: seconds, test_acc, val_acc per epoch.
"""
import argparse
import io
import json
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision.transforms as T
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from loader_peer import load


class SimpleCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32)
        self.conv2, self.bn2 = nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64)
        self.fc1, self.fc2 = nn.Linear(64 * 7 * 7, 128), nn.Linear(128, 10)
        self.dropout = nn.Dropout(0.25)

    def forward(self, x):
        x = F.relu(self.bn1(F.max_pool2d(self.conv1(x), 2)))
        x = F.relu(self.bn2(F.max_pool2d(self.conv2(x), 2)))
        return self.fc2(self.dropout(F.relu(self.fc1(x.flatten(1)))))


class Pngs(Dataset):
    def __init__(self, images, labels, transform):
        self.images, self.labels, self.transform = images, labels, transform

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.transform(Image.open(io.BytesIO(self.images[i])).convert("L")), self.labels[i]


def evaluate(model, batches):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in batches:
            correct += (model(x).argmax(1) == y).sum().item()
            total += len(y)
    model.train()
    return correct / total


def main():
    p = argparse.ArgumentParser()
    p.add_argument("train")
    p.add_argument("test")
    p.add_argument("--mean", type=float, required=True)
    p.add_argument("--std", type=float, required=True)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--mode", choices=["png", "memory"], default="png")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(42)
    images, labels = load(a.train)
    test_images, test_labels = load(a.test)
    # The shoal tables' ids are the IDX positions: the first 54,000 train, the rest validate.
    tr, va = slice(0, 54000), slice(54000, len(images))
    transform = T.Compose([T.ToTensor(), T.Normalize([a.mean], [a.std])])

    def tensors(imgs, labs):
        x = torch.stack([transform(Image.open(io.BytesIO(b)).convert("L")) for b in imgs])
        return x, torch.tensor(labs)

    if a.mode == "memory":
        train_x, train_y = tensors(images[tr], labels[tr])
        val = list(zip(*[t.split(512) for t in tensors(images[va], labels[va])]))
        test = list(zip(*[t.split(512) for t in tensors(test_images, test_labels)]))
    start = time.perf_counter()
    if a.mode == "png":
        kw = dict(num_workers=a.workers, persistent_workers=a.workers > 0)
        train_loader = DataLoader(Pngs(images[tr], labels[tr], transform), batch_size=128, shuffle=True, **kw)
        val = DataLoader(Pngs(images[va], labels[va], transform), batch_size=512, **kw)
        test = DataLoader(Pngs(test_images, test_labels, transform), batch_size=512, **kw)
    model = SimpleCNN()
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    val_acc = []
    for epoch in range(a.epochs):
        if a.mode == "png":
            batches = train_loader
        else:
            order = torch.randperm(len(train_y))
            batches = ((train_x[i], train_y[i]) for i in order.split(128))
        for x, y in batches:
            opt.zero_grad()
            F.cross_entropy(model(x), torch.as_tensor(y)).backward()
            opt.step()
        val_acc.append(round(evaluate(model, val), 4))
    test_acc = evaluate(model, test)
    print(json.dumps({"engine": "python torch " + a.mode, "seconds": round(time.perf_counter() - start, 3),
                      "test_acc": round(test_acc, 4), "val_acc": val_acc, "epochs": a.epochs}), flush=True)


if __name__ == "__main__":
    main()
