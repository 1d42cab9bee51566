#!/usr/bin/python3
"""The peer of `shoal data bench`: torch's DataLoader with PIL and torchvision transforms over the
same image bytes (exported by loader_compare.py), with the same batch size, worker count and
transforms. Prints one JSON line like shoal's: samples_per_s, batches, seconds, per-epoch figures.

    loader_peer.py IMAGES.bin --mean M --std S [--channels C] [--random-resized-crop N] [--flip]
                   [--batch-size N] [--workers N] [--epochs N]
"""
import argparse
import io
import json
import struct
import time

import torch
import torchvision.transforms as T
from PIL import Image
from torch.utils.data import DataLoader, Dataset


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    (count,) = struct.unpack_from("<q", data, 0)
    pos = 8
    images, labels = [], []
    for _ in range(count):
        length, label = struct.unpack_from("<qq", data, pos)
        pos += 16
        images.append(data[pos : pos + length])
        labels.append(label)
        pos += length
    return images, labels


class Images(Dataset):
    def __init__(self, images, labels, mode, transform):
        self.images, self.labels, self.mode, self.transform = images, labels, mode, transform

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        image = Image.open(io.BytesIO(self.images[i])).convert(self.mode)
        return self.transform(image), self.labels[i]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("images")
    p.add_argument("--mean", type=float, required=True)
    p.add_argument("--std", type=float, required=True)
    p.add_argument("--channels", type=int, default=1)
    p.add_argument("--random-resized-crop", type=int, default=0)
    p.add_argument("--flip", action="store_true")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--epochs", type=int, default=1)
    a = p.parse_args()

    images, labels = load(a.images)
    steps = []
    if a.random_resized_crop:
        steps.append(T.RandomResizedCrop(a.random_resized_crop))
    if a.flip:
        steps.append(T.RandomHorizontalFlip())
    steps += [T.ToTensor(), T.Normalize([a.mean] * a.channels, [a.std] * a.channels)]
    dataset = Images(images, labels, "L" if a.channels == 1 else "RGB", T.Compose(steps))
    torch.manual_seed(0)
    loader = DataLoader(dataset, batch_size=a.batch_size, shuffle=True, num_workers=a.workers,
                        persistent_workers=a.workers > 0)
    start = time.perf_counter()
    batches = samples = 0
    epochs = []
    for epoch in range(a.epochs):
        epoch_start, epoch_samples = time.perf_counter(), 0
        for x, y in loader:
            batches += 1
            samples += x.shape[0]
            epoch_samples += x.shape[0]
        seconds = time.perf_counter() - epoch_start
        epochs.append({"epoch": epoch, "samples": epoch_samples, "seconds": round(seconds, 6),
                       "samples_per_s": round(epoch_samples / seconds, 1)})
    seconds = time.perf_counter() - start
    print(json.dumps({"engine": "torch DataLoader + PIL", "samples_per_s": round(samples / seconds, 1),
                      "batches": batches, "seconds": round(seconds, 6), "samples": samples,
                      "workers": a.workers, "epochs": epochs}), flush=True)


if __name__ == "__main__":
    main()
