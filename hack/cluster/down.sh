#!/usr/bin/env bash
# `make cluster-down`: stops the node up.sh started and gives the host back as it found it.
#
# Order: pods deleted through the API while the kubelet still runs (so it tears down their
# sandboxes: CNI DEL, veths, IPs, masquerade rules), then kube-proxy and the kubelet,
# containerd's leftover tasks and containerd, then the scheduler, the controller manager, the
# apiserver and last etcd (an apiserver whose etcd went first ignores SIGTERM for 60 s).
# Then hoststate.py restore puts back every sysctl, iptables table, mount, interface, cgroup
# and watched path that differs from the record up.sh took before its first change, and the
# state directory goes. Exit 1 (the state directory kept) if the host still differs.
# Harmless when nothing is up.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

[[ "$(id -u)" == 0 ]] || die "needs root"
if [[ ! -d "${state}" ]]; then
  log "nothing to tear down (${state} does not exist)"
  exit 0
fi
bin="$(bash "${repo_root}/hack/controlplane/build.sh")"

alive() { [[ -f "${state}/pids/$1.pid" ]] && kill -0 "$(cat "${state}/pids/$1.pid")" 2>/dev/null; }
# stop NAME [SECONDS]: SIGTERM, wait, then SIGKILL.
stop() {
  local name="$1" secs="${2:-20}" pid
  alive "${name}" || return 0
  pid="$(cat "${state}/pids/${name}.pid")"
  kill -TERM "${pid}" 2>/dev/null || true
  local deadline=$((SECONDS + secs))
  while kill -0 "${pid}" 2>/dev/null && (( SECONDS < deadline )); do sleep 0.2; done
  if kill -0 "${pid}" 2>/dev/null; then
    log "${name} ignored SIGTERM for ${secs}s: SIGKILL"
    kill -KILL "${pid}" 2>/dev/null || true
    while kill -0 "${pid}" 2>/dev/null; do sleep 0.1; done
  fi
}
kc() { "${bin}/kubectl" --kubeconfig="${state}/admin.kubeconfig" --request-timeout=10s "$@"; }

if alive kube-apiserver && alive kubelet; then
  # Nothing may recreate the pods being deleted.
  stop kube-controller-manager
  stop kube-scheduler
  kc delete pods --all --all-namespaces --grace-period=1 --wait=true --timeout=90s \
    >/dev/null 2>&1 || log "some pods did not go within 90 s; their sandboxes are cleaned below"
  # The kubelet stops a deleted pod's sandbox (CNI DEL) before it confirms the deletion; the
  # sandboxes' removal is its garbage collection's: wait until no task is left running.
  deadline=$((SECONDS + 60))
  while ctr_ tasks ls -q 2>/dev/null | grep -q . && (( SECONDS < deadline )); do sleep 0.5; done
fi
stop kube-proxy
stop kubelet
if alive containerd; then
  for task in $(ctr_ tasks ls -q 2>/dev/null); do
    ctr_ tasks kill -s SIGKILL "${task}" >/dev/null 2>&1 || true
  done
  sleep 1
  for task in $(ctr_ tasks ls -q 2>/dev/null); do
    ctr_ tasks rm -f "${task}" >/dev/null 2>&1 || true
  done
fi
stop containerd
stop kube-scheduler
stop kube-controller-manager
stop kube-apiserver 70
stop etcd

if [[ -f "${state}/host-before.json" ]]; then
  changed="$(python3 "${cluster_here}/hoststate.py" diff "${state}/host-before.json" || true)"
  if [[ -n "${changed}" ]]; then
    log "restoring $(wc -l <<< "${changed}") host changes:"
    sed 's/^/  /' <<< "${changed}" >&2
  fi
  if ! python3 "${cluster_here}/hoststate.py" restore "${state}/host-before.json"; then
    die "the host still differs from before the cluster (above); ${state} kept"
  fi
else
  log "no host record in ${state}: stopped the processes only"
fi
# Anything still mounted under the state directory (restore unmounted what it saw new).
for m in $(awk -v r="${state}" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r); do
  umount "${m}" 2>/dev/null || umount -l "${m}"
done
rm -rf --one-file-system "${state}"
log "down: host restored"
