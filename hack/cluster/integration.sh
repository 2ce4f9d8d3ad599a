#!/usr/bin/env bash
# The integration suite's CronJob tests (tests/integration/cronjob) against `make cluster`'s
# node through PYCTRL_TEST_KUBECONFIG, with the controller deployed by `make deploy` running
# beside them (`make e2e-integration`; issue 34):
#
#   hack/cluster/integration.sh [PYTEST_ARGS...]
#
# Each test still runs its own controller in-process on a FakeClock (tests/integration/cronjob/
# env.py), restricted to its namespace, against the node's apiserver, etcd, KCM and kubelet;
# the deployed controller watches every namespace and acts on the same CronJobs in real time.
# Deselected because they cannot apply there (the reason is printed):
#   * always: test_active_job_deleted_by_hand_gives_one_missing_job_event counts the MissingJob
#     events of one controller; the deployed one emits its own for the same deletion (2, not 1);
#   * when the deployed overlay has the webhook (manifests/default, sharded): the tests that
#     create invalid CronJobs to see how the controller reports them; the webhook refuses them
#     at admission (422), as it should.
# The rest skip themselves where the suite says they need an envtest control plane (token
# kubeconfigs, a webhook registered by URL on 127.0.0.1, kwok pods, a lenient CRD).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

kubeconfig="${PYCTRL_E2E_KUBECONFIG:-${state}/kubeconfig}"
[[ -f "${kubeconfig}" ]] || die "integration: no node: ${kubeconfig} does not exist (make cluster)"
kubectl="${KUBECTL:-$(bash "${repo_root}/hack/controlplane/build.sh")/kubectl}"
k() { "${kubectl}" --kubeconfig="${kubeconfig}" "$@"; }
k -n pyctrl-system rollout status deployment/cronjob-controller --timeout=120s >/dev/null \
  || die "integration: the controller is not deployed (make image && make deploy)"

suite=tests/integration/cronjob
deselect=("${suite}/test_missing_job.py::test_active_job_deleted_by_hand_gives_one_missing_job_event")
log "integration: deselected: the deployed controller emits its own MissingJob event: ${deselect[0]##*::}"
if k get validatingwebhookconfiguration pyctrl-cronjob-controller >/dev/null 2>&1; then
  deselect+=("${suite}/test_problems.py::test_invalid_cronjob_reported_once_without_hot_loop"
             "${suite}/test_template_check.py::test_refused_template_is_not_ready_within_seconds")
  log "integration: deselected: the deployed webhook refuses the invalid CronJobs of" \
      "test_invalid_cronjob_reported_once_without_hot_loop, test_refused_template_is_not_ready_within_seconds"
fi
args=()
for d in "${deselect[@]}"; do args+=(--deselect "${d}"); done
cd "${repo_root}"
PYCTRL_TEST_KUBECONFIG="${kubeconfig}" exec "${PYTEST:-.venv/bin/pytest}" -q -rs "${suite}" \
  "${args[@]}" "$@"
