#!/usr/bin/env bash
# Multi-host data-parallel training: two network namespaces joined by a veth pair play two hosts;
# `shoal launch -H` starts one rank on each through a remote shell. The ranks must end with
# identical parameters, equal to one process's on the same global batch. Skipped (77) without root.
set -euo pipefail
shoal=$1
worker=$2
here=$(cd "$(dirname "$0")" && pwd)
source "$here/netns-hosts.sh"
tmp=$(mktemp -d)
trap 'netns_down; rm -rf "$tmp"' EXIT
status=0
netns_up "$tmp" || status=$?
[ "$status" = 0 ] || exit "$status"

mkdir -p "$tmp/single" "$tmp/two"
"$worker" equal "$tmp/single" >/dev/null
port=$((20000 + RANDOM % 20000))
"$shoal" launch -np 2 -H 10.231.0.1:1,10.231.0.2:1 --rsh "$tmp/rsh" --master-port "$port" --start-timeout 60 \
  -- "$worker" equal "$tmp/two" | tee "$tmp/out"
grep -q '^\[1\] buckets' "$tmp/out"
cmp "$tmp/two/params-0.bin" "$tmp/two/params-1.bin"
/usr/bin/python3 - "$tmp/single/params-0.bin" "$tmp/two/params-0.bin" <<'PY'
import struct, sys
a, b = (open(p, "rb").read() for p in sys.argv[1:3])
assert len(a) == len(b) and len(a) > 0, "parameter files differ in size"
n = len(a) // 4
diff = max(abs(x - y) for x, y in zip(struct.unpack(f"{n}f", a), struct.unpack(f"{n}f", b)))
assert diff < 1e-5, f"two hosts differ from one process by {diff}"
print(f"two hosts: ranks identical; max difference from one process {diff:.2e}")
PY
