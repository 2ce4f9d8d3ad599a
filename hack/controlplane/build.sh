#!/usr/bin/env bash
# Builds the upstream control-plane binaries pinned in go.mod (etcd, kube-apiserver,
# kube-controller-manager, kubectl) once into a per-version cache directory and prints
# that directory on stdout. Later calls only print it.
#
# Contract:
#   - If KUBEBUILDER_ASSETS is set and holds etcd and kube-apiserver, that directory is
#     printed and nothing is built (the setup-envtest layout).
#   - Otherwise binaries land in ${XDG_CACHE_HOME:-$HOME/.cache}/pyctrl/controlplane/<versions>/.
#     Each binary is built into a temporary name and renamed, so an interrupted build never
#     leaves a half-written binary that a later run would trust.
#   - Progress goes to stderr; stdout carries only the directory.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [[ -n "${KUBEBUILDER_ASSETS:-}" && -x "${KUBEBUILDER_ASSETS}/etcd" && -x "${KUBEBUILDER_ASSETS}/kube-apiserver" ]]; then
  echo "${KUBEBUILDER_ASSETS}"
  exit 0
fi

# Versions come from go.mod so there is one place to bump them.
k8s_version="$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "${here}/go.mod")"
etcd_version="$(awk '$1 == "go.etcd.io/etcd/server/v3" && $2 ~ /^v/ {print $2; exit}' "${here}/go.mod")"
if [[ -z "${k8s_version}" || -z "${etcd_version}" ]]; then
  echo "build.sh: cannot read pinned versions from ${here}/go.mod" >&2
  exit 1
fi

cache_root="${XDG_CACHE_HOME:-${HOME}/.cache}/pyctrl/controlplane"
out="${cache_root}/k8s-${k8s_version}_etcd-${etcd_version}"
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

build() {
  local name="$1" pkg="$2" ldflags="$3"
  if [[ -x "${out}/${name}" ]]; then
    return 0
  fi
  echo "build.sh: building ${name} (${pkg}) into ${out}" >&2
  local start=$SECONDS
  (cd "${here}" && CGO_ENABLED=0 go build -mod=mod -trimpath -ldflags "-s -w ${ldflags}" \
      -o "${out}/.${name}.tmp" "${pkg}")
  mv -f "${out}/.${name}.tmp" "${out}/${name}"
  echo "build.sh: built ${name} in $((SECONDS - start))s" >&2
}

build etcd ./etcd "${etcd_stamp}"
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "${stamp}"
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "${stamp}"
build kubectl k8s.io/kubernetes/cmd/kubectl "${stamp}"

echo "${out}"
