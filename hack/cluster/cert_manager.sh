#!/usr/bin/env bash
# cert-manager on `make cluster`'s node, built from source (no registry serves its images here):
#
#   hack/cluster/cert_manager.sh            build (once, cached), import, install, wait Ready
#   hack/cluster/cert_manager.sh build      only build the binaries and images into the cache
#
# Version: CERT_MANAGER_VERSION, default v1.11.5, the newest release whose controller, webhook
# and cainjector commands live in the github.com/cert-manager/cert-manager module itself: from
# v1.12 on they are modules of their own (…/cmd/controller etc.), which the Go module proxy
# reachable here does not serve (404), while the main module is served.
#
# Steps:
# 1. The module from the Go module proxy; `go build` (CGO_ENABLED=0, static) of cmd/controller,
#    cmd/webhook, cmd/cainjector, and `go install helm.sh/helm/v3/cmd/helm` (HELM_VERSION) to
#    render the module's own chart. Cached in <cache>/cert-manager-<version>/.
# 2. One image per binary, FROM scratch with only the binary (user 1000), built with buildah
#    and imported into the node's containerd as localhost/cert-manager-<name>:<version>.
# 3. The CRDs from deploy/crds (Helm's label lines dropped), then `helm template` of
#    deploy/charts/cert-manager (its Chart.yaml written from Chart.template.yaml, the images
#    above with pullPolicy Never, startupapicheck off: it needs cmctl, another module) applied
#    with kubectl; waits for the three Deployments and for the webhook to answer a dry-run.
#
# Time here (2 shared cores, busy): ~9 min for the three binaries and ~7 min for helm, once;
# then ~1 min to install. KUBECONFIG and KUBECTL as for `make deploy` (defaults: the node's
# kubeconfig and the control plane's kubectl).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

version="${CERT_MANAGER_VERSION:-v1.11.5}"
helm_version="${HELM_VERSION:-v3.22.0}"
cache="${node_cache}/cert-manager-${version}"
export KUBECONFIG="${KUBECONFIG:-${state}/kubeconfig}"
kubectl="${KUBECTL:-$(bash "${repo_root}/hack/controlplane/build.sh")/kubectl}"
names=(controller webhook cainjector)
work=""
cleanup() {
  [[ -z "${work}" ]] || rm -rf "${work}"
  buildah_unguard_host
}
buildah_guard_host
trap cleanup EXIT

build_binaries() {
  [[ -x "${cache}/bin/cainjector" && -x "${cache}/bin/helm" && -f "${cache}/chart/Chart.yaml" ]] \
    && return
  command -v go >/dev/null || die "cert-manager: go is needed to build it (make prereqs)"
  local dir start=$SECONDS
  work="$(mktemp -d)"
  dir="$(cd "${work}" && go mod download -json "github.com/cert-manager/cert-manager@${version}" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')"
  cp -r "${dir}" "${work}/src"
  chmod -R u+w "${work}/src"
  mkdir -p "${cache}/bin.tmp"
  log "cert-manager: building ${names[*]} ${version} from the Go module proxy (~9 min, once)"
  (cd "${work}/src" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "${cache}/bin.tmp/" \
    ./cmd/controller ./cmd/webhook ./cmd/cainjector)
  log "cert-manager: building helm ${helm_version} to render its chart (~7 min, once)"
  CGO_ENABLED=0 GOBIN="${cache}/bin.tmp" go install -trimpath -ldflags="-s -w" \
    "helm.sh/helm/v3/cmd/helm@${helm_version}"
  rm -rf "${cache}/chart" "${cache}/crds"
  cp -r "${work}/src/deploy/charts/cert-manager" "${cache}/chart"
  sed -e "s/^version: .*/version: ${version}/" -e "s/^appVersion: .*/appVersion: ${version}/" \
    "${cache}/chart/Chart.template.yaml" > "${cache}/chart/Chart.yaml"
  mkdir -p "${cache}/crds"
  local f
  for f in "${work}/src"/deploy/crds/crd-*.yaml; do
    # Helm's template labels ('{{ template ... }}') are not valid label values.
    grep -v "'{{" "${f}" | grep -v '{{-' > "${cache}/crds/${f##*/}"
  done
  rm -rf "${cache}/bin"
  mv "${cache}/bin.tmp" "${cache}/bin"
  log "cert-manager: built in $((SECONDS - start))s"
}

build_images() {
  local name ctr archive
  for name in "${names[@]}"; do
    archive="${cache}/${name}.tar"
    [[ -f "${archive}" ]] && continue
    ctr="$(buildah_ from scratch)"
    buildah_ copy "${ctr}" "${cache}/bin/${name}" "/app/cmd/${name}" >/dev/null
    buildah_ config --user 1000 --entrypoint "[\"/app/cmd/${name}\"]" "${ctr}"
    buildah_ commit -q "${ctr}" "localhost/cert-manager-${name}:${version}" >/dev/null
    buildah_ rm "${ctr}" >/dev/null
    buildah_ push -q "localhost/cert-manager-${name}:${version}" \
      "docker-archive:${archive}.tmp:localhost/cert-manager-${name}:${version}" >/dev/null
    mv -f "${archive}.tmp" "${archive}"
    log "cert-manager: image localhost/cert-manager-${name}:${version} ($(du -h "${archive}" | cut -f1))"
  done
}

install() {
  [[ -S "${containerd_sock}" ]] || die "cert-manager: no node (make cluster first)"
  local name
  for name in "${names[@]}"; do
    ctr_ images import "${cache}/${name}.tar" >/dev/null
  done
  "${kubectl}" apply --server-side --force-conflicts -f "${cache}/crds" >/dev/null
  "${kubectl}" wait --for=condition=Established --timeout=60s \
    crd/certificates.cert-manager.io crd/issuers.cert-manager.io >/dev/null
  "${kubectl}" create namespace cert-manager --dry-run=client -o yaml | "${kubectl}" apply -f - >/dev/null
  local server
  server="$("${kubectl}" version -o json | python3 -c \
    'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])')"
  "${cache}/bin/helm" template cert-manager "${cache}/chart" --namespace cert-manager \
    --kube-version "${server}" \
    --set image.repository=localhost/cert-manager-controller \
    --set webhook.image.repository=localhost/cert-manager-webhook \
    --set cainjector.image.repository=localhost/cert-manager-cainjector \
    --set image.pullPolicy=Never --set webhook.image.pullPolicy=Never \
    --set cainjector.image.pullPolicy=Never --set startupapicheck.enabled=false \
    | "${kubectl}" apply -f - >/dev/null
  for name in cert-manager cert-manager-webhook cert-manager-cainjector; do
    "${kubectl}" -n cert-manager rollout status "deployment/${name}" --timeout=300s >/dev/null
  done
  # The webhook answers once the cainjector has put its CA into the webhook configurations.
  local i
  for i in $(seq 60); do
    if "${kubectl}" -n cert-manager create --dry-run=server -f - >/dev/null 2>&1 <<EOF
apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: probe}
spec: {selfSigned: {}}
EOF
    then
      log "cert-manager: ${version} Ready (controller, webhook, cainjector)"
      return
    fi
    sleep 2
  done
  die "cert-manager: its webhook did not answer within 120s"
}

build_binaries
build_images
[[ "${1:-}" == build ]] || install
