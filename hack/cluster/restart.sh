#!/usr/bin/env bash
# Restarts one process of the node up.sh started (e.g. kubelet), with the same command line:
# SIGTERM, wait (20 s, then SIGKILL), start again detached, log appended. For e2e scenarios.
#   hack/cluster/restart.sh NAME     NAME: a file <state>/pids/NAME.pid (kubelet, kube-proxy, ...)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

name="${1:?usage: $0 NAME}"
pidfile="${state}/pids/${name}.pid"
[[ -f "${pidfile}" ]] || die "no ${pidfile}: is the node up?"
pid="$(cat "${pidfile}")"
mapfile -d '' argv < "/proc/${pid}/cmdline" || die "${name} (pid ${pid}) is not running"
kill -TERM "${pid}"
deadline=$((SECONDS + 20))
while kill -0 "${pid}" 2>/dev/null && (( SECONDS < deadline )); do sleep 0.2; done
kill -KILL "${pid}" 2>/dev/null || true
while kill -0 "${pid}" 2>/dev/null; do sleep 0.1; done
setsid "${argv[@]}" >>"${state}/logs/${name}.log" 2>&1 < /dev/null &
echo $! > "${pidfile}"
log "restarted ${name} (pid ${pid} -> $!)"
