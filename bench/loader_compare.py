#!/usr/bin/python3
"""Loader throughput and memory, shoal against torch's DataLoader with PIL, side by side.

    bench/loader_compare.py BUILD [--rounds N] [--epochs N] [--jpeg-epochs N]

Builds (once, under BUILD/bench-data) two tables with `shoal ingest fashion-mnist`: the 60,000
training images as 28x28 PNG, and the 10,000 test images resized to 224x224 JPEG. Exports their
bytes for the peer (bench/loader_peer.py), then per round and case runs, one after another:
the decode bound (BUILD/bench/shoal_decode_bound: the same bytes decoded in a tight loop on the
same threads; for the JPEG case also only the windows the loader's crops read, the loader's own
decoding), `shoal data bench`, and the peer, sampling the resident memory of each process
tree every 50 ms. Prints a Markdown table for docs/benchmarks.md: samples/s and memory are the
best of the rounds; shoal / bound is the median of each round's own ratio (the bound runs next
to shoal in every round, so a round's ratio is taken at one speed of this noisy machine).
"""
import argparse
import base64
import json
import os
import platform
import statistics
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PAGE = os.sysconf("SC_PAGE_SIZE")


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    try:
        return json.loads(out)
    except json.JSONDecodeError:
        return json.loads(out.strip().splitlines()[-1])


def tree(root):
    """root and its descendants."""
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                parents.setdefault(int(fields[1]), []).append(int(name))
            except OSError:
                pass
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(parents.get(pid, []))
    return out


def tree_memory(root):
    rss = pss = 0
    for pid in tree(root):
        try:
            with open(f"/proc/{pid}/statm") as f:
                rss += int(f.read().split()[1]) * PAGE
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        pss += int(line.split()[1]) * 1024
        except OSError:
            pass
    return rss, pss


def measured(cmd):
    """Runs cmd; returns its last stdout line as JSON and the peak RSS and PSS of its process tree."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    peak = [0, 0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            rss, pss = tree_memory(proc.pid)
            peak[0], peak[1] = max(peak[0], rss), max(peak[1], pss)
            done.wait(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    out = proc.stdout.read()
    proc.wait()
    done.set()
    sampler.join()
    if proc.returncode != 0:
        sys.exit(f"{cmd[0]} failed with status {proc.returncode}")
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_rss_mib"] = peak[0] / 2**20
    result["peak_pss_mib"] = peak[1] / 2**20
    return result


def ensure_table(shoal, path, args):
    if not os.path.isdir(os.path.join(path, "_delta_log")):
        print(f"ingesting {path} ...", file=sys.stderr)
        subprocess.run([shoal, "ingest", "fashion-mnist", "--out", path] + args, check=True,
                       stdout=subprocess.DEVNULL)


def export(shoal, table, out):
    """The image bytes and labels of a table, for the peer: count, then (length, label, bytes)."""
    if os.path.exists(out):
        return
    rows = subprocess.run([shoal, "cat", table, "--columns", "image,label"], check=True,
                          capture_output=True, text=True).stdout.splitlines()
    with open(out + ".tmp", "wb") as f:
        f.write(struct.pack("<q", len(rows)))
        for line in rows:
            row = json.loads(line)
            image = base64.b64decode(row["image"])
            f.write(struct.pack("<qq", len(image), row["label"]))
            f.write(image)
    os.replace(out + ".tmp", out)


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--epochs", type=int, default=5, help="epochs of the PNG case")
    p.add_argument("--jpeg-epochs", type=int, default=5, help="epochs of the JPEG case")
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    shoal = os.path.join(a.build, "shoal")
    bound = os.path.join(a.build, "bench", "shoal_decode_bound")
    data = os.path.join(a.build, "bench-data")
    os.makedirs(data, exist_ok=True)
    png, jpeg = os.path.join(data, "fmnist-train-png"), os.path.join(data, "fmnist-test-jpeg224")
    ensure_table(shoal, png, ["--split", "train", "--image-format", "png"])
    ensure_table(shoal, jpeg, ["--split", "test", "--image-format", "jpeg", "--resize", "224"])
    export(shoal, png, png + ".bin")
    export(shoal, jpeg, jpeg + ".bin")

    def stats(table):
        info = run_json([shoal, "table", "info", table])
        decode = json.loads(info["configuration"]["shoal.decode"])
        return str(decode["mean"][0]), str(decode["std"][0])

    t = str(a.threads)
    cases = []
    mean, std = stats(png)
    cases.append({
        "name": "Fashion-MNIST 28x28 PNG, normalize",
        "bound": [bound, png, "--threads", t, "--seconds", "2"],
        "shoal": [shoal, "data", "bench", png, "--batch-size", "256", "--threads", t, "--epochs", str(a.epochs)],
        "peer": [sys.executable, os.path.join(HERE, "loader_peer.py"), png + ".bin", "--mean", mean, "--std", std,
                 "--channels", "1", "--batch-size", "256", "--workers", t, "--epochs", str(a.epochs)],
    })
    mean, std = stats(jpeg)
    cases.append({
        "name": "224x224 JPEG as RGB, random resized crop + flip + normalize",
        "bound": [bound, jpeg, "--threads", t, "--seconds", "2"],
        # The loader decodes only the part of each JPEG its crop reads: its own decode cost.
        "window bound": [bound, jpeg, "--threads", t, "--seconds", "2", "--crop-window", "224"],
        "shoal": [shoal, "data", "bench", jpeg, "--batch-size", "256", "--threads", t, "--epochs", str(a.jpeg_epochs),
                  "--channels", "3", "--random-resized-crop", "224", "--flip"],
        "peer": [sys.executable, os.path.join(HERE, "loader_peer.py"), jpeg + ".bin", "--mean", mean, "--std", std,
                 "--channels", "3", "--random-resized-crop", "224", "--flip", "--batch-size", "256",
                 "--workers", t, "--epochs", str(a.jpeg_epochs)],
    })
    results = {c["name"]: {e: [] for e in ("bound", "window bound", "shoal", "peer") if e in c} for c in cases}
    for r in range(a.rounds):
        for c in cases:
            order = [e for e in ("bound", "window bound", "shoal", "peer") if e in c]
            if r % 2 == 1:
                order.reverse()
            for engine in order:
                print(f"round {r + 1}/{a.rounds}: {c['name']}: {engine} ...", file=sys.stderr)
                results[c["name"]][engine].append(measured(c[engine]))

    def ratios(res, bound="bound"):
        """shoal / bound in each round."""
        return [s["samples_per_s"] / b["samples_per_s"] for s, b in zip(res["shoal"], res[bound])]

    def later(run):
        """samples/s over the epochs after the first (from each epoch's own rate)."""
        rates = [e["samples_per_s"] for e in run["epochs"][1:]]
        return len(rates) / sum(1 / r for r in rates) if rates else float("nan")

    print(f"\nMachine: {cpu_name()}, {os.cpu_count()} cores; {a.rounds} rounds: samples/s and memory the best "
          f"of the rounds, shoal / bound the median of the rounds' own ratios; "
          f"{a.threads} decode threads (shoal) and {a.threads} DataLoader workers (peer), batch 256.\n")
    print("| case | shoal samples/s | peer samples/s | shoal / peer | decode bound samples/s | shoal / bound "
          "| shoal peak RSS MiB | peer peak RSS MiB (all processes) | shoal / peer RSS | peer peak PSS MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c in cases:
        res = results[c["name"]]
        s = max(x["samples_per_s"] for x in res["shoal"])
        q = max(x["samples_per_s"] for x in res["peer"])
        b = max(x["samples_per_s"] for x in res["bound"])
        srss = max(x["peak_rss_mib"] for x in res["shoal"])
        qrss = min(x["peak_rss_mib"] for x in res["peer"])
        qpss = min(x["peak_pss_mib"] for x in res["peer"])
        print(f"| {c['name']} | {s:.0f} | {q:.0f} | {s / q:.2f}x | {b:.0f} | {statistics.median(ratios(res)):.0%} "
              f"| {srss:.0f} | {qrss:.0f} | {srss / qrss:.2f} | {qpss:.0f} |")
    for c in cases:
        res = results[c["name"]]
        per_round = ", ".join(f"{r:.0%}" for r in ratios(res))
        steady = ", ".join(f"{later(x) / b['samples_per_s']:.0%}" for x, b in zip(res["shoal"], res["bound"]))
        print(f"\n{c['name']}: shoal / bound by round: {per_round}; the epochs after the first alone: {steady}.")
        if "window bound" in res:
            w = max(x["samples_per_s"] for x in res["window bound"])
            print(f"Decoding only the crop windows, as the loader does, in the same tight loop: best {w:.0f} samples/s; "
                  f"shoal / that by round: {', '.join(f'{r:.0%}' for r in ratios(res, 'window bound'))}.")
    print()
    for c, label in zip(cases, ("PNG", "JPEG")):
        first = results[c["name"]]["shoal"][0]
        print(f"shoal RSS at the end of each epoch of the {label} case (MiB): " +
              ", ".join(f"{e['rss_mib']:.0f}" for e in first["epochs"]))
    print("peer samples/s by epoch (PNG case): " +
          ", ".join(f"{e['samples_per_s']:.0f}" for e in results[cases[0]["name"]]["peer"][0]["epochs"]))
    for engine in ("shoal", "peer"):
        best = max(results[cases[1]["name"]][engine], key=lambda x: x["samples_per_s"])
        print(f"{engine} samples/s by epoch (JPEG case, its best run): " +
              ", ".join(f"{e['samples_per_s']:.0f}" for e in best["epochs"]))


if __name__ == "__main__":
    main()
