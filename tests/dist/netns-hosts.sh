# Two "hosts" on one machine: Linux network namespaces joined by a veth pair, for the
# multi-host test and benchmark. Source it, then:
#   netns_up DIR [RATE]   creates the namespaces (10.231.0.1 and 10.231.0.2), optionally
#                         shaping the link to RATE (tc, e.g. 1gbit), and writes DIR/rsh, a
#                         remote shell for `shoal launch --rsh` that runs a command "on" a host
#   netns_down            removes them (also on exit, through a trap the caller sets)
# Needs root; netns_up returns 77 (skip) when it cannot create namespaces.
NETNS_A="shoal-a-$$"
NETNS_B="shoal-b-$$"
VETH_A="sva$$"
VETH_B="svb$$"

netns_down() {
  ip netns del "$NETNS_A" 2>/dev/null || true
  ip netns del "$NETNS_B" 2>/dev/null || true
}

netns_up() {
  local dir=$1 rate=${2:-}
  if [ "$(id -u)" != 0 ]; then
    echo "skipped: network namespaces need root (this is uid $(id -u))"
    return 77
  fi
  if ! ip netns add "$NETNS_A" 2>/dev/null; then
    echo "skipped: cannot create a network namespace here (ip netns add failed)"
    return 77
  fi
  ip netns add "$NETNS_B"
  ip link add "$VETH_A" type veth peer name "$VETH_B"
  ip link set "$VETH_A" netns "$NETNS_A"
  ip link set "$VETH_B" netns "$NETNS_B"
  ip -n "$NETNS_A" addr add 10.231.0.1/24 dev "$VETH_A"
  ip -n "$NETNS_B" addr add 10.231.0.2/24 dev "$VETH_B"
  for ns in "$NETNS_A" "$NETNS_B"; do
    ip -n "$ns" link set lo up
  done
  ip -n "$NETNS_A" link set "$VETH_A" up
  ip -n "$NETNS_B" link set "$VETH_B" up
  if [ -n "$rate" ]; then
    # A token bucket on both ends: each direction gets RATE.
    tc -n "$NETNS_A" qdisc add dev "$VETH_A" root tbf rate "$rate" burst 256kb latency 50ms
    tc -n "$NETNS_B" qdisc add dev "$VETH_B" root tbf rate "$rate" burst 256kb latency 50ms
  fi
  cat >"$dir/rsh" <<RSH
#!/bin/sh
# rsh HOST COMMAND: runs COMMAND in the namespace that plays HOST, as ssh would on it.
case "\$1" in
  10.231.0.1) ns=$NETNS_A dev=$VETH_A ;;
  10.231.0.2) ns=$NETNS_B dev=$VETH_B ;;
  *) echo "rsh: unknown host \$1" >&2; exit 255 ;;
esac
exec ip netns exec "\$ns" env GLOO_SOCKET_IFNAME="\$dev" /bin/sh -c "\$2"
RSH
  chmod +x "$dir/rsh"
}
