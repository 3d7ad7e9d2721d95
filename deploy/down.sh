#!/usr/bin/env bash
# Stops what up.sh started.   ./deploy/down.sh [--state-dir DIR] [--purge]
set -euo pipefail
state=${MKUBE_STATE_DIR:-$HOME/.mkube}
purge=0
while [ $# -gt 0 ]; do
  case "$1" in
    --state-dir) state=$2; shift 2 ;;
    --state-dir=*) state=${1#*=}; shift ;;
    --purge) purge=1; shift ;;
    -h|--help) sed -n '2p' "$0"; exit 0 ;;
    *) echo "down.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done

# Stop in reverse start order; each by its recorded pid, never by name.
for name in agent-node02 agent-node01 agent-master01 scheduler controller-manager apiserver store; do
  pid_file=$state/run/$name.pid
  [ -f "$pid_file" ] || continue
  pid=$(cat "$pid_file")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "$name (pid $pid) did not stop in 10 s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    echo "stopped $name"
  fi
  rm -f "$pid_file"
done
if [ "$purge" = 1 ]; then
  rm -rf "$state"
  echo "removed $state"
fi
