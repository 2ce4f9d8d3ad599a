#!/usr/bin/env bash
# Checks what `make` needs before it starts, and says in one line what is missing.
#
#   hack/prereqs.sh python PYTHON   -> PYTHON must be CPython >= 3.11
#   hack/prereqs.sh go              -> Go >= 1.25 on PATH, unless KUBEBUILDER_ASSETS holds
#                                      etcd and kube-apiserver (then Go is not needed)
# Exit 0 when satisfied; otherwise one line on stderr and exit 1.
set -euo pipefail

case "${1:-}" in
  python)
    py="${2:-python3}"
    if ! command -v "${py}" >/dev/null 2>&1; then
      echo "prereqs: '${py}' not found; Python >= 3.11 is required (set PYTHON=/path/to/python3.11)" >&2
      exit 1
    fi
    found="$("${py}" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')"
    if ! "${py}" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
      echo "prereqs: ${py} is Python ${found}; Python >= 3.11 is required (set PYTHON=/path/to/python3.11)" >&2
      exit 1
    fi
    ;;
  go)
    if [[ -n "${KUBEBUILDER_ASSETS:-}" && -x "${KUBEBUILDER_ASSETS}/etcd" && -x "${KUBEBUILDER_ASSETS}/kube-apiserver" ]]; then
      exit 0
    fi
    if ! command -v go >/dev/null 2>&1; then
      echo "prereqs: 'go' not found; the local control plane needs Go >= 1.25 on PATH, or KUBEBUILDER_ASSETS pointing at etcd and kube-apiserver binaries" >&2
      exit 1
    fi
    ver="$(go env GOVERSION 2>/dev/null || true)"; ver="${ver#go}"
    major="${ver%%.*}"; rest="${ver#*.}"; minor="${rest%%.*}"
    if [[ ! "${major}" =~ ^[0-9]+$ || ! "${minor}" =~ ^[0-9]+$ ]] || (( major < 1 || (major == 1 && minor < 25) )); then
      echo "prereqs: found Go ${ver:-unknown}; the local control plane needs Go >= 1.25, or KUBEBUILDER_ASSETS pointing at etcd and kube-apiserver binaries" >&2
      exit 1
    fi
    ;;
  *)
    echo "usage: hack/prereqs.sh python PYTHON | go" >&2
    exit 2
    ;;
esac
