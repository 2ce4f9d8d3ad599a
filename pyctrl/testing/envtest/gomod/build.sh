#!/usr/bin/env bash
# Builds the upstream control-plane binaries pinned in go.mod (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl) and kwok (pinned in kwok/go.mod, with the
# pod and node Stage files it runs) once into a per-version cache directory and prints that
# directory on stdout. Later calls only print it.
#
# This directory ships in pyctrl's wheel: `pyctrl envtest install` (pyctrl/testing/envtest/
# binaries.py) runs this script, and hack/controlplane/build.sh in a checkout execs it, so the
# module files and the build exist once.
#
# Contract:
#   - If KUBEBUILDER_ASSETS is set and holds etcd and kube-apiserver, that directory is
#     printed and nothing is built (the setup-envtest layout).
#   - Otherwise binaries land in ${XDG_CACHE_HOME:-$HOME/.cache}/pyctrl/controlplane/<versions>/.
#     Each binary is built into a temporary name and renamed, so an interrupted build never
#     leaves a half-written binary that a later run would trust.
#   - kwok and its Stages land in <dir>/kwok and <dir>/kwok-stages/ (see envtest's pods mode,
#     pyctrl/testing/envtest/pods.py); <dir>/kwok.version names the kwok version they are
#     from, so bumping kwok/go.mod rebuilds them and nothing else.
#   - Concurrent runs take turns (flock on <dir>/.build.lock when flock exists); a run that
#     finds the lock held says so once on stderr and waits. PYCTRL_CONTROLPLANE_LOCKED=1 says
#     the caller (pyctrl envtest install) already holds that lock.
#   - `build.sh --dir` prints the directory for the pinned versions, `build.sh --versions`
#     the Kubernetes, etcd and kwok versions; neither builds anything.
#   - Progress goes to stderr; stdout carries only the directory.
#   - `build.sh --node` also builds kubelet and kube-proxy from the same k8s.io/kubernetes
#     module (hack/cluster/, `make cluster`, runs a real node with them).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [[ -n "${KUBEBUILDER_ASSETS:-}" && -x "${KUBEBUILDER_ASSETS}/etcd" && -x "${KUBEBUILDER_ASSETS}/kube-apiserver" ]]; then
  echo "${KUBEBUILDER_ASSETS}"
  exit 0
fi

# Versions come from go.mod so there is one place to bump them.
k8s_version="$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "${here}/go.mod")"
etcd_version="$(awk '$1 == "go.etcd.io/etcd/server/v3" && $2 ~ /^v/ {print $2; exit}' "${here}/go.mod")"
kwok_version="$(awk '$1 == "require" && $2 == "sigs.k8s.io/kwok" {print $3; exit}' "${here}/kwok/go.mod")"
if [[ -z "${k8s_version}" || -z "${etcd_version}" || -z "${kwok_version}" ]]; then
  echo "build.sh: cannot read pinned versions from ${here}/go.mod" >&2
  exit 1
fi

cache_root="${XDG_CACHE_HOME:-${HOME}/.cache}/pyctrl/controlplane"
out="${cache_root}/k8s-${k8s_version}_etcd-${etcd_version}"
case "${1:-}" in
  --dir) echo "${out}"; exit 0 ;;
  --versions) echo "${k8s_version} ${etcd_version} ${kwok_version}"; exit 0 ;;
esac
mkdir -p "${out}"

major="${k8s_version#v}"; major="${major%%.*}"
minor="${k8s_version#v*.}"; minor="${minor%%.*}"
build_date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
# Without these stamps the servers report v0.0.0 and clients' version skew checks misfire.
stamp=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  stamp+=" -X ${pkg}.gitVersion=${k8s_version}"
  stamp+=" -X ${pkg}.gitMajor=${major}"
  stamp+=" -X ${pkg}.gitMinor=${minor}"
  stamp+=" -X ${pkg}.gitTreeState=clean"
  stamp+=" -X ${pkg}.buildDate=${build_date}"
done
etcd_stamp="-X go.etcd.io/etcd/api/v3/version.GitSHA=${etcd_version}"

# build NAME PKG LDFLAGS [MODULE_DIR]: go build PKG (in MODULE_DIR, default this directory's
# module) into ${out}/NAME unless that is already there.
build() {
  local name="$1" pkg="$2" ldflags="$3" module="${4:-${here}}"
  if [[ -x "${out}/${name}" ]]; then
    return 0
  fi
  echo "build.sh: building ${name} (${pkg}) into ${out}" >&2
  local start=$SECONDS
  (cd "${module}" && CGO_ENABLED=0 go build -mod=mod -trimpath -ldflags "-s -w ${ldflags}" \
      -o "${out}/.${name}.tmp" "${pkg}")
  mv -f "${out}/.${name}.tmp" "${out}/${name}"
  echo "build.sh: built ${name} in $((SECONDS - start))s" >&2
}

# kwok plus the Stage files envtest runs it with, all from the same module version. The
# Stages are upstream's own files, picked one by one (kustomize/stage/ in the module):
#   node-fast             nodes become Ready at once;
#   pod-fast pod-ready    a bound pod starts Running at once;
#   pod-general pod-complete  a Job's Running pod Succeeds after a delay its annotations set
#                         (pod-complete.stage.kwok.x-k8s.io/delay and .../jitter-delay);
#   pod-chaos pod-container-running-failed  a pod labelled
#                         pod-container-running-failed.stage.kwok.x-k8s.io=true Fails instead;
#   pod-fast pod-delete   a deleted pod goes away at once (there is no kubelet to confirm it).
kwok_stages=(
  node/fast/node-initialize.yaml
  pod/fast/pod-ready.yaml
  pod/general/pod-complete.yaml
  pod/chaos/pod-container-running-failed.yaml
  pod/fast/pod-delete.yaml
)
build_kwok() {
  if [[ -x "${out}/kwok" && -d "${out}/kwok-stages" \
        && "$(cat "${out}/kwok.version" 2>/dev/null)" == "${kwok_version}" ]]; then
    return 0
  fi
  rm -f "${out}/kwok" "${out}/kwok.version"
  build kwok sigs.k8s.io/kwok/cmd/kwok "" "${here}/kwok"
  local src
  src="$(cd "${here}/kwok" && go list -mod=mod -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
  rm -rf "${out}/.kwok-stages.tmp" && mkdir -p "${out}/.kwok-stages.tmp"
  for stage in "${kwok_stages[@]}"; do
    # One directory, distinct names: pod/general/pod-complete.yaml -> pod-general-pod-complete.yaml
    cp "${src}/kustomize/stage/${stage}" "${out}/.kwok-stages.tmp/${stage//\//-}"
  done
  chmod -R u+w "${out}/.kwok-stages.tmp"  # module cache files are read-only
  rm -rf "${out}/kwok-stages" && mv "${out}/.kwok-stages.tmp" "${out}/kwok-stages"
  echo "${kwok_version}" > "${out}/kwok.version"
}

# One build at a time per cache directory: parallel test workers (pytest-xdist) and make's
# -j all run this script, and two builds of one binary would share its temporary name. A
# later caller waits here, then finds everything built. Without flock they are not serialized.
if [[ "${PYCTRL_CONTROLPLANE_LOCKED:-}" != 1 ]] && command -v flock >/dev/null 2>&1; then
  exec 9>"${out}/.build.lock"
  if ! flock -n 9; then
    echo "build.sh: another build holds ${out}/.build.lock; waiting for it" >&2
    flock 9
  fi
fi

build etcd ./etcd "${etcd_stamp}"
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "${stamp}"
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "${stamp}"
build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler "${stamp}"
build kubectl k8s.io/kubernetes/cmd/kubectl "${stamp}"
build_kwok
if [[ "${1:-}" == "--node" ]]; then
  build kubelet k8s.io/kubernetes/cmd/kubelet "${stamp}"
  build kube-proxy k8s.io/kubernetes/cmd/kube-proxy "${stamp}"
fi

echo "${out}"
