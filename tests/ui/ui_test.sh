#!/usr/bin/env bash
# The tracking UI end to end in headless Chromium: a server over a store with two runs; the run
# page must draw its metric charts, the comparison page must overlay both runs' curves, the
# runs table and the registry must list them. Keeps a screenshot of the run page.
set -euo pipefail
shoal=$1
screenshot=$2
browser=$(command -v chromium || true)
if [ -z "$browser" ]; then
  echo "skipped: Debian's chromium is not installed (scripts/install-deps installs it)"
  exit 77
fi
tmp=$(mktemp -d)
port=$((30000 + RANDOM % 20000))
"$shoal" server --port "$port" --store "$tmp/store" 2>"$tmp/server.log" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$tmp"' EXIT
ids=$(/usr/bin/python3 - "$port" <<'PY'
import json, sys, time, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}/api/2.0/mlflow/"
def call(path, body=None):
    for _ in range(100):
        try:
            req = urllib.request.Request(base + path, data=json.dumps(body).encode() if body is not None else None,
                                         headers={"Content-Type": "application/json"})
            return json.load(urllib.request.urlopen(req))
        except OSError:
            time.sleep(0.05)
    raise SystemExit("the server does not answer")
exp = call("experiments/create", {"name": "ui-test"})["experiment_id"]
ids = []
for k, name in enumerate(["baseline", "wider"]):
    run = call("runs/create", {"experiment_id": exp, "run_name": name})["run"]["info"]["run_id"]
    metrics = [{"key": "val_loss", "value": 1.0 / (s + 1) + 0.05 * k, "timestamp": 1, "step": s * 10} for s in range(10)]
    metrics += [{"key": "val_acc", "value": 0.5 + 0.04 * s, "timestamp": 1, "step": s * 10} for s in range(10)]
    call("runs/log-batch", {"run_id": run, "metrics": metrics, "params": [{"key": "lr", "value": str(0.001 * (k + 1))}],
                            "tags": [{"key": "model", "value": "simple_cnn"}]})
    ids.append(run)
call("model-versions/create", {"name": "ui-model", "source": "/models/a", "run_id": ids[0]})
print(exp, ids[0], ids[1])
PY
)
read -r exp run1 run2 <<<"$ids"
chrome() { "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --virtual-time-budget=15000 "$@" 2>/dev/null; }

dom=$(chrome --dump-dom "http://127.0.0.1:$port/#/runs/$run1")
grep -q 'data-ready="1"' <<<"$dom" || { echo "run page did not finish: $dom" | head -c 2000; exit 1; }
# (The page's own script holds the markup's pattern once, with ${...} in it: count drawn values only.)
grep -q 'class="chart" data-metric="val_loss"' <<<"$dom" && grep -q 'class="chart" data-metric="val_acc"' <<<"$dom" ||
  { echo "run page: the val_loss and val_acc charts are missing"; exit 1; }
[ "$(grep -o 'class="series" data-points="10"' <<<"$dom" | wc -l)" = 2 ] || { echo "run page: expected a 10-point curve in each chart"; exit 1; }
grep -q '>lr<' <<<"$dom" && grep -q 'simple_cnn' <<<"$dom" || { echo "run page: params or tags missing"; exit 1; }

dom=$(chrome --dump-dom "http://127.0.0.1:$port/#/compare/$run1,$run2")
[ "$(grep -o 'class="series" data-points="10"' <<<"$dom" | wc -l)" = 4 ] || { echo "compare page: expected 2 curves in each of 2 charts"; exit 1; }

dom=$(chrome --dump-dom "http://127.0.0.1:$port/#/experiments/$exp")
grep -q 'baseline' <<<"$dom" && grep -q 'wider' <<<"$dom" || { echo "runs table: runs missing"; exit 1; }
dom=$(chrome --dump-dom "http://127.0.0.1:$port/#/models")
grep -q 'ui-model' <<<"$dom" || { echo "models page: ui-model missing"; exit 1; }

chrome --window-size=1280,1100 --screenshot="$screenshot" "http://127.0.0.1:$port/#/runs/$run1" >/dev/null
[ -s "$screenshot" ] || { echo "no screenshot"; exit 1; }
echo "UI: run page draws 2 charts, comparison overlays 2 runs, runs and models listed; screenshot $screenshot"
