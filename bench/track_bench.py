#!/usr/bin/python3
"""Tracking-server benchmarks with Debian's wrk against `shoal server` on loopback
(`make bench-track`):

1. log-batch ingest: 1000 metrics a request from 4 connections, as metric points per second
   (goal >= 100k); afterwards every acknowledged point is counted in the store;
2. log-metric latency at a fixed offered load near 500 requests/s: p50 and p99 (goal p99 <= 10 ms);
3. runs/search with a metric filter over a seeded experiment of 10,000 runs (MLflow's default page
   of 1000 runs): p50 and p99 (goal <= 100 ms).

There is no peer in the run: MLflow's Python server is not packaged for Debian, and nothing may be
downloaded. The goals are the issue's absolute figures.

Usage: bench/track_bench.py BUILD_DIR [--runs N] [--seconds S]
"""
import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api(port, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/2.0/mlflow/{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


def seconds(text):
    m = re.match(r"([\d.]+)(us|ms|s|m)$", text)
    if not m:
        raise ValueError("unknown wrk time " + text)
    scale = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[m.group(2)]
    return float(m.group(1)) * scale


def wrk(port, script, connections, duration, env=None, latency=False):
    cmd = ["wrk", "-t", str(min(2, connections)), "-c", str(connections), "-d", f"{duration}s",
           "-s", os.path.join(ROOT, "bench", "wrk", script)]
    if latency:
        cmd.append("--latency")
    cmd.append(f"http://127.0.0.1:{port}")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env={**os.environ, **(env or {})})
    text = out.stdout
    result = {"requests_per_s": float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1)),
              "requests": int(re.search(r"(\d+) requests in", text).group(1))}
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    if errors or "Socket errors" in text:
        raise RuntimeError("wrk saw errors:\n" + text + out.stderr)
    if latency:
        for p in ("50", "99"):
            result[f"p{p}_ms"] = seconds(re.search(rf"^\s+{p}%\s+(\S+)", text, re.M).group(1)) * 1000
    return result


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build = sys.argv[1]
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 10000
    duration = int(sys.argv[sys.argv.index("--seconds") + 1]) if "--seconds" in sys.argv else 15
    with tempfile.TemporaryDirectory(prefix="shoal-track-bench-") as tmp:
        store = os.path.join(tmp, "store")
        print(f"seeding {runs} runs ...", flush=True)
        experiment = subprocess.run([os.path.join(build, "bench", "shoal_track_seed"), store, "--runs", str(runs)],
                                    check=True, capture_output=True, text=True).stdout.strip()
        port = free_port()
        server = subprocess.Popen([os.path.join(build, "shoal"), "server", "--store", store, "--port", str(port)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            for _ in range(100):
                try:
                    api(port, "experiments/search", {"max_results": 1})
                    break
                except OSError:
                    time.sleep(0.1)
            ingest_run = api(port, "runs/create", {"experiment_id": "0", "run_name": "ingest"})["run"]["info"]["run_id"]
            latency_run = api(port, "runs/create", {"experiment_id": "0", "run_name": "latency"})["run"]["info"]["run_id"]

            print("log-batch ingest ...", flush=True)
            batch = wrk(port, "log_batch.lua", 4, duration, {"SHOAL_BENCH_RUN": ingest_run})
            print("log-metric latency at a fixed pace ...", flush=True)
            # 8 connections pausing 13 ms between requests offer about 550 requests/s.
            metric = wrk(port, "log_metric.lua", 8, duration, {"SHOAL_BENCH_RUN": latency_run, "SHOAL_BENCH_DELAY_MS": "13"},
                         latency=True)
            print(f"runs/search over {runs} runs ...", flush=True)
            search = wrk(port, "search_runs.lua", 1, duration, {"SHOAL_BENCH_EXPERIMENT": experiment}, latency=True)
            matched = len(api(port, "runs/search", {"experiment_ids": [experiment], "filter": "metrics.val_loss < 0.5",
                                                    "max_results": 1000})["runs"])
        finally:
            server.terminate()
            server.wait(timeout=30)
        db = sqlite3.connect(os.path.join(store, "tracking.db"))
        stored = db.execute("SELECT COUNT(*) FROM metrics WHERE run_uuid = ?", (ingest_run,)).fetchone()[0]
        stored_latency = db.execute("SELECT COUNT(*) FROM metrics WHERE run_uuid = ?", (latency_run,)).fetchone()[0]
    if stored < batch["requests"] * 1000 or stored_latency < metric["requests"]:
        sys.exit(f"acknowledged points are missing: {stored} stored of {batch['requests'] * 1000} acknowledged")

    result = {
        "log_batch_points_per_s": round(batch["requests_per_s"] * 1000),
        "log_batch_points_stored": stored,
        "log_metric_requests_per_s": round(metric["requests_per_s"], 1),
        "log_metric_p50_ms": round(metric["p50_ms"], 2),
        "log_metric_p99_ms": round(metric["p99_ms"], 2),
        "search_runs": runs,
        "search_page_runs": matched,
        "search_p50_ms": round(search["p50_ms"], 1),
        "search_p99_ms": round(search["p99_ms"], 1),
    }
    print(f"log-batch ingest:        {result['log_batch_points_per_s']:,} metric points/s (goal >= 100,000); "
          f"{stored:,} stored, every acknowledged one")
    print(f"log-metric at {result['log_metric_requests_per_s']:.0f} req/s: p50 {result['log_metric_p50_ms']} ms, "
          f"p99 {result['log_metric_p99_ms']} ms (goal p99 <= 10 ms)")
    print(f"runs/search, metric filter, {runs} runs, pages of {matched}: p50 {result['search_p50_ms']} ms, "
          f"p99 {result['search_p99_ms']} ms (goal <= 100 ms)")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
