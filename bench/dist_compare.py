#!/usr/bin/python3
"""Data-parallel benchmarks, side by side in one go (`make bench-dist`):

1. scaling efficiency: np=2 at 1 thread each against np=1 at 1 thread, SimpleCNN and CIFAR
   ResNet-18 on synthetic batches (shoal_dist_bench scaling);
2. gradient-sync bandwidth against one raw c10d Gloo allreduce of the same bytes;
3. on a 1 Gbit/s link between two network namespaces (tc), the share of the gradient
   communication hidden behind backward (root only; skipped otherwise);
4. the seed article's two charts: runtime and final val_loss of `shoal train` on Fashion-MNIST
   against the cluster configuration, written as SVG to docs/img/.

Usage: bench/dist_compare.py BUILD_DIR [--epochs N] [--skip-train]
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, **kw):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)
    return out.stdout


def rank0_json(stdout):
    lines = [l for l in stdout.splitlines() if l.startswith("[0] {")]
    if not lines:
        raise RuntimeError("no JSON line from rank 0 in:\n" + stdout)
    return json.loads(lines[-1][4:])


def launch(build, np, args, netns=None):
    shoal = os.path.join(build, "shoal")
    if netns is None:
        return rank0_json(run([shoal, "launch", "-np", str(np), "--"] + args))
    # Two namespaces as two hosts, joined by a link shaped to `netns` (e.g. 1gbit).
    script = f"""
set -e
source {ROOT}/tests/dist/netns-hosts.sh
d=$(mktemp -d)
trap 'netns_down; rm -rf "$d"' EXIT
netns_up "$d" {netns}
{shoal} launch -np 2 -H 10.231.0.1:1,10.231.0.2:1 --rsh "$d/rsh" --master-port 29611 --start-timeout 60 -- {' '.join(args)}
"""
    return rank0_json(run(["bash", "-c", script]))


def is_root():
    return os.geteuid() == 0


def svg_bars(path, title, unit, labels, values, fmt):
    width, height, left, top, bar_h, gap = 640, 60 + 46 * len(values), 230, 44, 28, 18
    peak = max(values) * 1.15 or 1
    rows = []
    for i, (label, v) in enumerate(zip(labels, values)):
        y = top + i * (bar_h + gap)
        w = (width - left - 90) * v / peak
        rows.append(
            f'<text x="{left - 10}" y="{y + 19}" text-anchor="end" font-size="13">{label}</text>'
            f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="#3b6ea8"/>'
            f'<text x="{left + w + 6:.1f}" y="{y + 19}" font-size="13">{fmt(v)} {unit}</text>'
        )
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif">'
        f'<rect width="100%" height="100%" fill="white"/>'
        f'<text x="{width / 2}" y="24" text-anchor="middle" font-size="16">{title}</text>'
        + "".join(rows)
        + "</svg>\n"
    )
    with open(path, "w") as f:
        f.write(svg)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    build = sys.argv[1]
    epochs = int(sys.argv[sys.argv.index("--epochs") + 1]) if "--epochs" in sys.argv else 2
    bench = os.path.join(build, "bench", "shoal_dist_bench")
    cpu = run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"]).strip()
    print(f"machine: {cpu}, {os.cpu_count()} cores")

    print("\n1. scaling efficiency (np=2, 1 thread each, against np=1 at 1 thread; best of 2 rounds, alternating)")
    for model, batch, steps in (("simple_cnn", 64, 40), ("resnet18_cifar", 32, 6)):
        best = {1: {"samples_per_s": 0.0}, 2: {"samples_per_s": 0.0}}
        for _ in range(2):
            for np in (1, 2):
                r = launch(build, np, [bench, "scaling", "--model", model, "--batch", str(batch), "--steps", str(steps)])
                if r["samples_per_s"] > best[np]["samples_per_s"]:
                    best[np] = r
        eff = best[2]["samples_per_s"] / (2 * best[1]["samples_per_s"])
        split = lambda r: ", ".join(f"{k} {v:.1f}" for k, v in r["ms_per_step"].items())
        print(f"   {model}: np=1 {best[1]['samples_per_s']:.0f} samples/s, np=2 {best[2]['samples_per_s']:.0f} samples/s, "
              f"efficiency {eff:.0%} (goal >= 90%)")
        print(f"      ms a step, np=1: {split(best[1])}; np=2: {split(best[2])}")

    print("\n2. gradient-sync bandwidth against a raw c10d Gloo allreduce of the same bytes (median of 3 runs)")
    runs = sorted((launch(build, 2, [bench, "bandwidth", "--model", "resnet18_cifar", "--reps", "7"]) for _ in range(3)),
                  key=lambda r: r["ratio"])
    r = runs[1]  # the median run
    print(f"   resnet18_cifar, {r['bytes'] / 1e6:.1f} MB in {r['buckets']} buckets: raw {r['raw_gbit_per_s']:.2f} Gbit/s, "
          f"sync {r['sync_gbit_per_s']:.2f} Gbit/s: ratio {r['ratio']:.0%} "
          f"(runs: {', '.join(format(x['ratio'], '.0%') for x in runs)}; goal >= 90%)")

    print("\n3. communication hidden behind backward on a 1 Gbit/s link between two namespaces")
    if is_root():
        runs = sorted((launch(build, 2, [bench, "overlap", "--model", "resnet18_cifar", "--batch", "32", "--reps", "5"],
                              netns="1gbit") for _ in range(3)), key=lambda r: r["hidden_share"])
        r = runs[1]  # the median run
        print(f"   resnet18_cifar batch 32, {r['buckets']} buckets: step without sync {r['backward_s']:.2f} s, "
              f"raw allreduce {r['raw_allreduce_s']:.2f} s ({r['bytes'] * 8 / r['raw_allreduce_s'] / 1e9:.2f} Gbit/s), "
              f"synchronised step {r['synced_backward_s']:.2f} s: {r['hidden_share']:.0%} hidden "
              f"(runs: {', '.join(format(x['hidden_share'], '.0%') for x in runs)}; goal >= 50%)")
    else:
        print("   skipped: network namespaces and tc need root")

    if "--skip-train" in sys.argv:
        return
    print(f"\n4. shoal train on Fashion-MNIST ({epochs} epochs) by cluster configuration")
    data = os.path.join(build, "bench-data")
    os.makedirs(data, exist_ok=True)
    shoal = os.path.join(build, "shoal")
    configs = [("1 process, 2 threads", 1, None), ("2 processes, 1 host", 2, None)]
    if is_root():
        configs.append(("2 hosts, 1 Gbit/s link", 2, "1gbit"))
    labels, seconds, losses = [], [], []
    for label, np, netns in configs:
        with tempfile.TemporaryDirectory() as runs:
            args = [shoal, "train", "--config", os.path.join(ROOT, "examples/fashion_mnist.yaml"),
                    f"--data.root={data}", f"--trainer.max_epochs={epochs}", f"--trainer.default_root_dir={runs}",
                    "--callbacks.early_stopping.enabled=false", "--trainer.enable_progress_bar=false"]
            if np == 1:
                r = json.loads(run(args, cwd=ROOT).strip().splitlines()[-1])
            else:
                r = launch(build, np, args, netns=netns)
        labels.append(label)
        seconds.append(r["seconds"])
        losses.append(r["val_loss"])
        print(f"   {label}: {r['seconds']:.1f} s, val_loss {r['val_loss']:.4f}, test_acc {r['test_acc']:.4f}")
    img = os.path.join(ROOT, "docs", "img")
    os.makedirs(img, exist_ok=True)
    svg_bars(os.path.join(img, "dist_runtime.svg"), f"shoal train, Fashion-MNIST, {epochs} epochs: runtime", "s",
             labels, seconds, lambda v: f"{v:.0f}")
    svg_bars(os.path.join(img, "dist_val_loss.svg"), f"shoal train, Fashion-MNIST, {epochs} epochs: final val_loss", "",
             labels, losses, lambda v: f"{v:.4f}")
    print(f"   charts: {img}/dist_runtime.svg, {img}/dist_val_loss.svg")


if __name__ == "__main__":
    main()
