#!/usr/bin/env bash
# `make image` without Docker: buildah bud of the unmodified Dockerfile, then its size, then
# (when hack/cluster's node is up) an import into the node's containerd.
#
#   hack/cluster/image.sh IMG
#   BUILD_CONTEXT=DIR hack/cluster/image.sh IMG   (DIR/Dockerfile instead: a scaffolded project)
#
# The Dockerfile builds FROM ${PYTHON_IMAGE} (python:3.11-slim-bookworm). PYTHON_IMAGE in the
# environment is passed on as that build arg. Unset, the upstream image is tried (a 60 s pull);
# when no registry answers, images.sh's local base (debootstrap'd bookworm with Debian's
# python3 3.11: localhost/pyctrl/python:3.11-bookworm) is built once and used instead, and
# the script says so. The host's /etc/pip.conf and CA bundle are mounted into RUN steps (not
# into the image). buildah keeps its storage under the node cache (common.sh: vfs, no
# mounts on the host). Stdout: nothing; the size and the import go to stderr.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

img="${1:?usage: $0 IMG}"
context="${BUILD_CONTEXT:-${repo_root}}"
command -v "${BUILDAH:-buildah}" >/dev/null 2>&1 || die "image: neither docker (with an engine) nor buildah found"
mkdir -p "${node_cache}"

buildah_guard_host
trap buildah_unguard_host EXIT

base="${PYTHON_IMAGE:-}"
if [[ -z "${base}" ]]; then
  upstream="docker.io/library/python:3.11-slim-bookworm"
  if buildah_ inspect --type image "${upstream}" >/dev/null 2>&1 \
      || timeout 60 buildah_ pull -q "${upstream}" >/dev/null 2>&1; then
    base="${upstream}"
  else
    log "image: ${upstream} cannot be pulled (no registry reachable): building FROM the local" \
        "base ${base_image} (hack/cluster/images.sh base: debootstrap bookworm + python3 3.11)"
    bash "${cluster_here}/images.sh" base
    base="${base_image}"
  fi
fi

# docker.io/... form of IMG, the name the kubelet resolves an image reference to.
full="${img}"
first="${img%%/*}"
if [[ "${img}" != */* ]]; then
  full="docker.io/library/${img}"
elif [[ "${first}" != *.* && "${first}" != *:* && "${first}" != localhost ]]; then
  full="docker.io/${img}"
fi
[[ "${full##*/}" == *:* || "${full}" == *@* ]] || full="${full}:latest"

# The host's pip configuration and CA bundle are lent (read-only, RUN steps only) to the build:
# behind a proxy with its own CA, pip in the image trusts what pip on the host trusts.
lend=()
for f in /etc/pip.conf /etc/ssl/certs/ca-certificates.crt; do
  [[ -f "${f}" ]] && lend+=(--volume "${f}:${f}:ro")
done

log "image: buildah bud -t ${full} (FROM ${base})"
start=$SECONDS
buildah_ bud --isolation chroot --layers=false --build-arg "PYTHON_IMAGE=${base}" "${lend[@]}" \
  -t "${full}" -f "${context}/Dockerfile" "${context}" >&2
log "image: built ${full} in $((SECONDS - start))s, size $(buildah_ images --format '{{.Size}}' "${full}" | head -1)" \
    "(uncompressed; base $(buildah_ images --format '{{.Size}}' "${base}" | head -1))"

if [[ -S "${containerd_sock}" ]]; then
  archive="${node_cache}/images/.controller.tar"
  rm -f "${archive}"
  buildah_ push -q "${full}" "docker-archive:${archive}:${full}" >/dev/null
  ctr_ images import "${archive}" >/dev/null
  rm -f "${archive}"
  log "image: imported into the node's containerd (${full})"
fi
