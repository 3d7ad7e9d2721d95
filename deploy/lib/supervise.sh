#!/usr/bin/env bash
# Runs a daemon and starts it again whenever it exits, as Restart=always does for the units in
# deploy/systemd (the scheduler and the controller-manager exit by design when they lose their
# leader lease, as Kubernetes' do):
#   supervise.sh NAME PID_FILE [--adopt PID] [--listen-file FILE] -- COMMAND...
# The daemon's output goes where the supervisor's does (up.sh: the daemon's log), and so does a
# line at each exit: "mkube: NAME exited with status N; restarting in Xs". The wait is 0.5 s
# after a run of 1 s or more (a daemon that served, then was killed or lost its lease: the
# cluster wants it back at once); it doubles, up to 8 s, while the daemon keeps exiting sooner
# (it cannot start: a bad flag, a port taken). The daemon's pid is written to PID_FILE at each start (up.sh and down.sh find it there).
#   --adopt PID         the daemon already runs as PID (started by someone else): it is watched
#                       until it exits, then COMMAND is started in its place.
#   --listen-file FILE  the daemon's --address-file: a daemon started with --listen HOST:0 is
#                       started again on the port it bound, so that those who dial it still can.
# SIGTERM or SIGINT: passed on to the daemon; the supervisor exits once the daemon has, without
# starting it again. SIGUSR1: the supervisor exits at once and leaves the daemon running
# (down.sh sends it first, so that nothing is started again while it stops the daemons in order).
set -uo pipefail
name=$1 pid_file=$2
shift 2
adopt='' listen_file=''
while [ $# -gt 0 ]; do
  case "$1" in
    --adopt) adopt=$2; shift 2 ;;
    --listen-file) listen_file=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "supervise.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "supervise.sh: no command to run" >&2; exit 2; }
cmd=("$@")

# stop: empty while supervising, "term" once told to stop with the daemon, "release" once told to
# leave it. waiter: what `wait` waits for (the daemon, or for an adopted one a watcher of it).
stop='' child='' waiter='' sleeper=''
on_term() {
  stop=term
  [ -z "$child" ] || kill -TERM "$child" 2>/dev/null
  [ -z "$sleeper" ] || kill "$sleeper" 2>/dev/null
}
on_release() {
  stop=release
  [ -z "$sleeper" ] || kill "$sleeper" 2>/dev/null
}
trap on_term TERM INT
trap on_release USR1

say() { echo "$(date +%Y-%m-%dT%H:%M:%S.%3N) mkube: $name $*"; }
seconds() { printf '%d.%d' $(($1 / 1000)) $(($1 % 1000 / 100)); }

# A daemon started on port 0 is started again on the port its address file names.
pin_listen() {
  local i addr
  [ -n "$listen_file" ] && [ -s "$listen_file" ] || return 0
  addr=$(<"$listen_file")
  for i in "${!cmd[@]}"; do
    if [ "${cmd[$i]}" = --listen ] && [ $((i + 1)) -lt ${#cmd[@]} ] &&
      [[ "${cmd[$((i + 1))]}" == *:0 ]] && [[ "$addr" =~ :[0-9]+$ ]]; then
      cmd[i+1]=${cmd[$((i + 1))]%:0}:${addr##*:}
    fi
  done
}

delay_ms=500
now_ms() { date +%s%3N; }

while :; do
  started=$(now_ms)
  if [ -n "$adopt" ]; then
    child=$adopt
    adopt=''
    # Not this shell's child, so `wait` cannot wait for it: tail polls for it (5 times a second).
    tail --pid="$child" -s 0.2 -f /dev/null &
    waiter=$!
    adopted=1
  else
    "${cmd[@]}" </dev/null &
    child=$!
    waiter=$child
    adopted=0
    echo "$child" >"$pid_file.tmp" && mv -f "$pid_file.tmp" "$pid_file"
  fi
  # A signal that came before the daemon was known is acted on now.
  [ "$stop" != term ] || kill -TERM "$child" 2>/dev/null
  if [ "$stop" = release ]; then
    [ "$adopted" = 0 ] || kill "$waiter" 2>/dev/null
    exit 0
  fi
  wait "$waiter" 2>/dev/null
  status=$?
  # A trapped signal ends `wait` early (with 128 + the signal, as a daemon killed by that signal
  # would): on SIGTERM wait again, for the daemon itself; on SIGUSR1 leave it.
  while [ -n "$stop" ] && kill -0 "$waiter" 2>/dev/null; do
    if [ "$stop" = release ]; then
      [ "$adopted" = 0 ] || kill "$waiter" 2>/dev/null
      exit 0
    fi
    wait "$waiter" 2>/dev/null
    status=$?
  done
  [ -z "$stop" ] || exit 0
  pin_listen
  [ $(($(now_ms) - started)) -lt 1000 ] || delay_ms=500
  if [ "$adopted" = 1 ]; then
    say "(pid $child, not started here) exited; restarting in $(seconds $delay_ms)s"
  else
    say "exited with status $status; restarting in $(seconds $delay_ms)s"
  fi
  # In the background, so that a signal ends the wait at once.
  sleep "$(seconds $delay_ms)" &
  sleeper=$!
  wait "$sleeper"
  if [ -n "$stop" ]; then
    kill "$sleeper" 2>/dev/null
    exit 0
  fi
  sleeper=''
  delay_ms=$((delay_ms * 2))
  [ "$delay_ms" -le 8000 ] || delay_ms=8000
done
