#!/usr/bin/env bash
# End-to-end run on kind: create a cluster, build and load the controller image, install
# cert-manager, the CRD and manifests/default (as `make deploy`), wait for the rollout, then run
# the integration suite against that cluster (PYCTRL_TEST_KUBECONFIG makes envtest use it
# instead of starting its own).
#
# Needs: docker (with a running engine), kind, kubectl, and network access for cert-manager.
# Env:   KIND_CLUSTER (default pyctrl-e2e), IMAGE (default pyctrl/cronjob-controller:e2e),
#        CERT_MANAGER_VERSION (default v1.16.2), KEEP_CLUSTER=1 to keep the cluster afterwards.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cluster="${KIND_CLUSTER:-pyctrl-e2e}"
image="${IMAGE:-pyctrl/cronjob-controller:e2e}"
cert_manager_version="${CERT_MANAGER_VERSION:-v1.16.2}"
workdir="$(mktemp -d)"
kubeconfig="${workdir}/kubeconfig"

for tool in docker kind kubectl; do
  if ! command -v "${tool}" >/dev/null 2>&1; then
    echo "kind-e2e: ${tool} is required" >&2
    exit 1
  fi
done
if ! docker info >/dev/null 2>&1; then
  echo "kind-e2e: docker is installed but no engine answers (docker info failed)" >&2
  exit 1
fi

cleanup() {
  if [[ "${KEEP_CLUSTER:-0}" != "1" ]]; then
    kind delete cluster --name "${cluster}" >/dev/null 2>&1 || true
  fi
  rm -rf "${workdir}"
}
trap cleanup EXIT

kubectl_() { kubectl --kubeconfig "${kubeconfig}" "$@"; }

echo "kind-e2e: creating cluster ${cluster}"
kind create cluster --name "${cluster}" --kubeconfig "${kubeconfig}" --wait 120s

echo "kind-e2e: building ${image}"
docker build -t "${image}" "${root}"
kind load docker-image "${image}" --name "${cluster}"

echo "kind-e2e: installing cert-manager ${cert_manager_version}"
kubectl_ apply -f "https://github.com/cert-manager/cert-manager/releases/download/${cert_manager_version}/cert-manager.yaml"
kubectl_ -n cert-manager rollout status deployment/cert-manager-webhook --timeout=180s
kubectl_ -n cert-manager rollout status deployment/cert-manager-cainjector --timeout=180s

echo "kind-e2e: installing the CRD and the controller (manifests/default, image ${image})"
# hack/deploy.sh (make deploy): CRD first, then the overlay with IMG set on a temp copy.
KUBECONFIG="${kubeconfig}" IMG="${image}" OVERLAY=manifests/default \
  bash "${root}/hack/deploy.sh" deploy
kubectl_ -n pyctrl-system rollout status deployment/cronjob-controller --timeout=180s

echo "kind-e2e: smoke test: the deployed controller runs the sample CronJob"
kubectl_ apply -f "${root}/manifests/samples/"
for _ in $(seq 1 30); do
  if [[ -n "$(kubectl_ get jobs -n default -l batch.pyctrl.io/cronjob -o name 2>/dev/null)" ]] \
     || [[ -n "$(kubectl_ get jobs -n default -o name 2>/dev/null)" ]]; then
    break
  fi
  sleep 5
done
kubectl_ get jobs -n default -o name | grep -q . || {
  echo "kind-e2e: no Job was created by the deployed controller within 150s" >&2
  kubectl_ -n pyctrl-system logs deployment/cronjob-controller --tail=100 >&2 || true
  exit 1
}
kubectl_ delete -f "${root}/manifests/samples/" --wait=true

# The suite runs its own in-process controllers (with fake clocks) and its own webhook; the
# deployed ones would act on the same objects, so stop them first.
kubectl_ -n pyctrl-system scale deployment/cronjob-controller --replicas=0
kubectl_ delete validatingwebhookconfiguration/pyctrl-cronjob-controller \
  mutatingwebhookconfiguration/pyctrl-cronjob-controller --ignore-not-found

echo "kind-e2e: running the integration suite against kind"
cd "${root}"
make setup
PYCTRL_TEST_KUBECONFIG="${kubeconfig}" .venv/bin/pytest -q tests/integration "$@"
