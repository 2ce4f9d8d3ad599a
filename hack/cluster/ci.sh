#!/usr/bin/env bash
# CI's real-node stage (.ci/run; issue 43): the operator deployed on one real node and
# tests/e2e against it, with the host given back as it was found even when a step fails.
#
#   hack/cluster/ci.sh              run the stage (root; skips with one line where it cannot)
#
# Contract:
#   - Runs only as root on Linux with a cgroup filesystem, apt-get or the Debian packages
#     up.sh needs, and Go or the node binaries cached; PYCTRL_CI_NODE=0 skips it, =1 makes a
#     machine that cannot run it an error instead of a skip. A skip prints why and exits 0.
#   - Order: up.sh --prepare (packages, binaries, local images: nothing that needs undoing),
#     then the host is recorded (hoststate.py save), then make cluster, make image, make deploy
#     OVERLAY=manifests/base, make e2e with PYCTRL_CI_NODE_E2E as its PYTEST_ARGS, then
#     PYCTRL_NODE=1 pytest tests/node (up and down twice more: the host restored after a pod,
#     and after a stage that fails).
#   - On every exit, pass or fail: make cluster-down, then the host is compared with the
#     record; a difference fails the stage and is printed. The stage's exit status is the first
#     failure's (a failing test and a clean teardown exit non-zero).
#   - PYCTRL_CI_NODE_SKIP_NODE_TESTS=1 leaves out tests/node (the test that runs this script
#     sets it: the stage inside that test must not start the test again).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "${repo_root}"

say() { echo "ci-node: $*" >&2; }

cannot_run() {
  [[ "$(uname -s)" == Linux ]] || { echo "not Linux"; return; }
  [[ "$(id -u)" == 0 ]] || { echo "not root"; return; }
  [[ -d /sys/fs/cgroup && -n "$(ls -A /sys/fs/cgroup 2>/dev/null)" ]] \
    || { echo "no cgroup filesystem at /sys/fs/cgroup"; return; }
  command -v containerd >/dev/null 2>&1 || command -v apt-get >/dev/null 2>&1 \
    || { echo "neither containerd nor apt-get to install it"; return; }
  if ! ip link add pyctrl-ciprobe type bridge 2>/dev/null; then
    echo "cannot create a network interface (no CAP_NET_ADMIN)"; return
  fi
  ip link del pyctrl-ciprobe
}

case "${PYCTRL_CI_NODE:-auto}" in
  0) say "skipped (PYCTRL_CI_NODE=0)"; exit 0 ;;
  1|auto) ;;
  *) die "PYCTRL_CI_NODE must be 0, 1 or auto, not ${PYCTRL_CI_NODE}" ;;
esac
reason="$(cannot_run)"
if [[ -n "${reason}" ]]; then
  [[ "${PYCTRL_CI_NODE:-auto}" == 1 ]] && die "PYCTRL_CI_NODE=1 but this machine cannot: ${reason}"
  say "skipped: this machine cannot run a real node (${reason})"
  exit 0
fi
[[ -e "${state}" ]] && die "${state} exists: a cluster is already up (make cluster-down)"

started=${SECONDS}
step() { say "$* ($((SECONDS - started)) s)"; }

step "preparing: packages, node binaries, local images"
PYCTRL_CLUSTER_APT=1 bash hack/prereqs.sh go >&2
PYCTRL_CLUSTER_APT=1 bash "${cluster_here}/up.sh" --prepare

record="$(mktemp /tmp/pyctrl-ci-host.XXXXXX.json)"
python3 "${cluster_here}/hoststate.py" save "${record}"
teardown() {
  local rc=$?
  trap - EXIT
  step "tearing down (stage exit ${rc})"
  make --no-print-directory cluster-down >&2 || { say "make cluster-down failed"; rc=1; }
  if ! diff="$(python3 "${cluster_here}/hoststate.py" diff "${record}")"; then
    say "the host differs from its record after the teardown:"
    echo "${diff}" | sed 's/^/  /' >&2
    rc=1
  fi
  rm -f "${record}"
  if (( rc == 0 )); then step "passed; the host is as it was"; else step "FAILED"; fi
  exit "${rc}"
}
trap teardown EXIT

step "make cluster"
make --no-print-directory cluster >/dev/null
KUBECONFIG="${state}/kubeconfig"
PATH="$(bash hack/controlplane/build.sh):${PATH}"
export KUBECONFIG PATH
step "make image"
make --no-print-directory image
step "make deploy OVERLAY=manifests/base"
make --no-print-directory deploy OVERLAY=manifests/base
kubectl -n pyctrl-system rollout status deployment/cronjob-controller --timeout=600s >&2
step "make e2e"
make --no-print-directory e2e PYTEST_ARGS="-p no:randomly -rs ${PYCTRL_CI_NODE_E2E:-}"
step "make cluster-down"
make --no-print-directory cluster-down >&2
if [[ "${PYCTRL_CI_NODE_SKIP_NODE_TESTS:-0}" != 1 ]]; then
  step "tests/node (up and down: the host restored)"
  PYCTRL_NODE=1 .venv/bin/pytest -q -p no:randomly -rs tests/node
fi
