#!/usr/bin/env bash
# deploy/lib/tokens.sh PKI_DIR NODE...: the bearer tokens of a cluster, made once each (0600).
#   tokens.csv           what the apiserver reads: token,user,uid,"groups" per identity
#   admin.token, scheduler.token, controller-manager.token, simulator.token, <node>.token
#                        each identity's own token, for its daemon's --token-file
# Prints "added" when it added an identity to an existing tokens.csv (a running apiserver
# must be restarted to know it).
set -euo pipefail
dir=$1
shift
mkdir -p "$dir"
umask 077
token() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
csv=$dir/tokens.csv
fresh=0
[ -f "$csv" ] || { : >"$csv"; fresh=1; }
added=0
# identity USER GROUPS FILE: a line for USER unless there is one; its token into FILE.
identity() {
  if ! awk -F, -v u="$1" '$2 == u {found=1} END {exit !found}' "$csv"; then
    echo "$(token),$1,$1,${2:+\"$2\"}" >>"$csv"
    added=1
  fi
  awk -F, -v u="$1" '$2 == u {print $1; exit}' "$csv" >"$dir/$3"
}
identity admin system:masters admin.token
identity system:kube-scheduler "" scheduler.token
identity system:kube-controller-manager "" controller-manager.token
# The simulated nodes' agent writes for many nodes: a local test facility, not a node.
identity system:node-simulator system:masters simulator.token
for node in "$@"; do identity "system:node:$node" system:nodes "$node.token"; done
if [ "$added" = 1 ] && [ "$fresh" = 0 ]; then echo added; fi
