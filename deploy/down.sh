#!/usr/bin/env bash
# Stops what up.sh started, and every pod process its agents left.
#   ./deploy/down.sh [--state-dir DIR] [--purge]
# The data stays in the state dir unless --purge, and so do the flags up.sh recorded: a later
# up.sh without them starts the same cluster again (it may be given others: nothing runs).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
state=${MKUBE_STATE_DIR:-$HOME/.mkube}
purge=0
while [ $# -gt 0 ]; do
  case "$1" in
    --state-dir) state=$2; shift 2 ;;
    --state-dir=*) state=${1#*=}; shift ;;
    --purge) purge=1; shift ;;
    -h|--help) sed -n '2,5p' "$0"; exit 0 ;;
    *) echo "down.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done
source "$root/deploy/lib/proc.sh"
[ ! -d "$state" ] || state=$(cd "$state" && pwd)

# The supervisors first, so that nothing is started again: each exits and leaves its daemon, which
# is stopped below in its turn.
release_supervisors "$state"

# stop_group NAME...: stops the named daemons together (each by its recorded pid; every
# daemon's command line names the state dir, so a pid the system gave to another program since
# is left alone).
stop_group() {
  local name pid pids=() names=() killed
  for name in "$@"; do
    [ -f "$state/run/$name.pid" ] || continue
    pid=$(cat "$state/run/$name.pid")
    if alive "$pid" "$state"; then
      pids+=("$pid")
      names+=("$name")
    fi
  done
  killed=$(stop_pids 10 "${pids[@]}")
  for name in "${names[@]}"; do echo "stopped $name"; done
  [ -z "$killed" ] || echo "killed pid(s) $killed, which did not stop within 10 s"
  for name in "$@"; do rm -f "$state/run/$name.pid"; done
}

# Agents first (each stops its pods), then the controllers, the apiserver, the store, and the
# image registry (up.sh --registry).
agents=()
for f in "$state"/run/agent-*.pid; do
  [ -e "$f" ] && agents+=("$(basename "$f" .pid)")
done
[ ${#agents[@]} -eq 0 ] || stop_group "${agents[@]}"
stop_group scheduler controller-manager
stop_group apiserver
stop_group store
stop_group registry

# Pod processes an agent left (one killed with -9, say): each is recorded with its monitor
# and start time; those still alive as recorded are killed with their process groups.
records=()
if [ -d "$state/nodes" ]; then
  mapfile -t records < <(find "$state/nodes" -path '*/pods/*/logs/*' -name '*.pid' -type f)
fi
if [ ${#records[@]} -gt 0 ]; then
  while read -r pid monitor ticks; do
    if alive "$pid" && [ "$(start_ticks "$pid")" = "$ticks" ]; then
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
      echo "stopped pod process $pid"
    fi
    if alive "$monitor" mkube-monitor; then
      kill -KILL -- "-$monitor" 2>/dev/null || kill -KILL "$monitor" 2>/dev/null || true
    fi
  done < <(python3 - "${records[@]}" <<'PY'
import json, sys
for path in sys.argv[1:]:
    try:
        r = json.load(open(path))
        print(int(r["pid"]), int(r["monitor"]), int(r["startTicks"]))
    except (OSError, ValueError, KeyError, TypeError):
        pass
PY
)
fi

if [ "$purge" = 1 ]; then
  rm -rf "$state"
  echo "removed $state"
fi
