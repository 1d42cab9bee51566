#!/usr/bin/python3
"""Time to train SimpleCNN on Fashion-MNIST to the same epoch, shoal against Python PyTorch, side by
side: `shoal train --config examples/fashion_mnist.yaml` for E epochs (early stopping off, the final
weights tested), and bench/train_peer.py with the same model, hyperparameters, split and threads,
reading the PNGs through torch's DataLoader, or training on tensors decoded beforehand.

    bench/train_compare.py BUILD [--epochs 4]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from loader_compare import cpu_name, ensure_table, export, run_json  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build")
    p.add_argument("--epochs", type=int, default=4)
    a = p.parse_args()
    shoal = os.path.join(a.build, "shoal")
    data = os.path.abspath(os.path.join(a.build, "bench-data"))
    os.makedirs(data, exist_ok=True)
    train, test = os.path.join(data, "fmnist-train-png"), os.path.join(data, "fmnist-test-png")
    ensure_table(shoal, train, ["--split", "train", "--image-format", "png"])
    ensure_table(shoal, test, ["--split", "test", "--image-format", "png"])
    export(shoal, train, train + ".bin")
    export(shoal, test, test + ".bin")
    decode = json.loads(run_json([shoal, "table", "info", train])["configuration"]["shoal.decode"])
    mean, std = str(decode["mean"][0]), str(decode["std"][0])
    runs = os.path.join(data, "train-runs")
    results = []
    print("shoal ...", file=sys.stderr)
    out = run_json([shoal, "train", "--config", os.path.join(HERE, "..", "examples", "fashion_mnist.yaml"),
                    f"--data.root={data}", "--data.dataset=", "--data.train_table=fmnist-train-png",
                    "--data.test_table=fmnist-test-png", f"--trainer.max_epochs={a.epochs}",
                    "--callbacks.early_stopping.enabled=false", "--callbacks.model_checkpoint.monitor=",
                    "--callbacks.model_checkpoint.filename={epoch}", f"--trainer.default_root_dir={runs}",
                    "--trainer.enable_progress_bar=false"])
    results.append(("shoal train (Delta table of PNGs, 2 loader threads)", out["seconds"], out["test_acc"]))
    for mode in ["png", "memory"]:
        print(f"python {mode} ...", file=sys.stderr)
        out = run_json([sys.executable, os.path.join(HERE, "train_peer.py"), train + ".bin", test + ".bin",
                        "--mean", mean, "--std", std, "--epochs", str(a.epochs), "--mode", mode])
        label = ("Python, PNGs through DataLoader (2 workers)" if mode == "png"
                 else "Python, tensors in memory")
        results.append((label, out["seconds"], out["test_acc"]))
    print(f"\nMachine: {cpu_name()}, {os.cpu_count()} cores; {a.epochs} epochs each, 2 compute threads.\n")
    print("| run | seconds | test accuracy | shoal time / this |")
    print("|---|---:|---:|---:|")
    for label, seconds, acc in results:
        print(f"| {label} | {seconds:.1f} | {acc:.4f} | {results[0][1] / seconds:.2f}x |")


if __name__ == "__main__":
    main()
