#!/usr/bin/env bash
# Install, remove or build the cronjob-controller (`make deploy`, `make undeploy`, `make image`).
#
#   deploy    CRD first (server-side apply, wait until Established), then the overlay.
#   undeploy  The reverse: webhook configurations first (failurePolicy Fail must not outlive
#             the pods that answer it), then the overlay. The CRD is KEPT unless
#             UNINSTALL_CRD=1: deleting it deletes every CronJob in every namespace and, through
#             garbage collection, the Jobs (and their pods) those CronJobs own.
#   render    Print the overlay as `deploy` would apply it (IMG applied).
#   image     docker build -t $IMG . (one-line error when docker or its engine is missing);
#             without docker or its engine but with buildah: hack/cluster/image.sh $IMG.
#
# deploy and undeploy first check that a cluster answers (kubectl version, 5 s), else say
# "no cluster reachable: set KUBECONFIG or CONTEXT" instead of kubectl's localhost:8080 error.
#
# Env: KUBECTL (default kubectl; honours KUBECONFIG), CONTEXT (a kubeconfig context),
#      OVERLAY (default manifests/default),
#      IMG (default pyctrl/cronjob-controller:dev; name[:tag] or name@sha256:...),
#      UNINSTALL_CRD=1, DOCKER (default docker), BUILDAH (default buildah).
# IMG never edits the checkout: a temporary kustomization wraps a copy of manifests/.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kubectl="${KUBECTL:-kubectl}"
context="${CONTEXT:-}"
docker="${DOCKER:-docker}"
overlay="${OVERLAY:-manifests/default}"
img="${IMG:-pyctrl/cronjob-controller:dev}"
image_name="pyctrl/cronjob-controller"

die() { echo "$*" >&2; exit 1; }

need_kubectl() {
  command -v "${kubectl}" >/dev/null 2>&1 \
    || die "deploy: kubectl not found (set KUBECTL=/path/to/kubectl)"
}

kc() {  # kubectl, on CONTEXT when set
  "${kubectl}" ${context:+"--context=${context}"} "$@"
}

need_cluster() {
  need_kubectl
  kc version --request-timeout=5s >/dev/null 2>&1 \
    || die "$1: no cluster reachable: set KUBECONFIG or CONTEXT"
}

overlay_dir() {
  case "${overlay}" in
    /*) echo "${overlay}" ;;
    *) echo "${root}/${overlay}" ;;
  esac
}

# Writes a kustomization in $1 that wraps a copy of manifests/ and sets the image to $img.
image_overlay() {
  local dir="$1" src rel name tag="" digest=""
  src="$(overlay_dir)"
  [[ -f "${src}/kustomization.yaml" ]] || die "deploy: no kustomization.yaml in ${src}"
  case "${src}" in
    "${root}/manifests"/*) rel="${src#"${root}/"}" ;;
    *) die "deploy: OVERLAY must be under manifests/ (got ${overlay})" ;;
  esac
  cp -r "${root}/manifests" "${dir}/manifests"
  if [[ "${img}" == *@* ]]; then
    name="${img%@*}"; digest="${img#*@}"
  elif [[ "${img##*/}" == *:* ]]; then
    name="${img%:*}"; tag="${img##*:}"
  else
    name="${img}"; tag="latest"
  fi
  {
    echo "apiVersion: kustomize.config.k8s.io/v1beta1"
    echo "kind: Kustomization"
    echo "resources:"
    echo "  - ${rel}"
    echo "images:"
    echo "  - name: ${image_name}"
    echo "    newName: \"${name}\""
    if [[ -n "${digest}" ]]; then
      echo "    digest: \"${digest}\""
    else
      echo "    newTag: \"${tag}\""
    fi
  } > "${dir}/kustomization.yaml"
}

tmp=""
trap 'if [[ -n "${tmp}" ]]; then rm -rf "${tmp}"; fi' EXIT

with_overlay() {  # runs "$@" with the image overlay's directory appended
  if [[ -z "${tmp}" ]]; then
    tmp="$(mktemp -d)"
    image_overlay "${tmp}"
  fi
  "$@" "${tmp}"
}

deploy() {
  need_cluster deploy
  echo "deploy: CRD (crds/), server-side"
  kc apply --server-side --force-conflicts -f "${root}/crds/"
  # A CRD just created has no .status.conditions yet, and kubectl wait fails at once on that
  # ("accessor error: <nil>") instead of waiting: retry it for up to 60 s.
  local deadline=$((SECONDS + 60))
  until kc wait --for=condition=Established --timeout=60s -f "${root}/crds/" >/dev/null 2>&1; do
    if (( SECONDS >= deadline )); then
      kc wait --for=condition=Established --timeout=1s -f "${root}/crds/"
      die "deploy: the CRD is not Established after 60 s"
    fi
    sleep 0.5
  done
  echo "deploy: ${overlay} with image ${img}"
  with_overlay kc apply -k
}

undeploy() {
  need_cluster undeploy
  echo "undeploy: webhook configurations, then ${overlay}"
  kc delete mutatingwebhookconfiguration,validatingwebhookconfiguration \
    -l app.kubernetes.io/name=cronjob-controller --ignore-not-found
  with_overlay kc delete --ignore-not-found -k
  if [[ "${UNINSTALL_CRD:-0}" == "1" ]]; then
    echo "undeploy: deleting the CRD: every CronJob in every namespace goes, and garbage" \
         "collection deletes the Jobs (and pods) they own"
    kc delete --ignore-not-found -f "${root}/crds/"
  else
    echo "undeploy: CRD kept: CronJobs and their Jobs stay (no new runs are created until a" \
         "controller runs again); UNINSTALL_CRD=1 deletes the CRD, all CronJobs and their Jobs"
  fi
}

image() {
  if command -v "${BUILDAH:-buildah}" >/dev/null 2>&1 \
      && ! { command -v "${docker}" >/dev/null 2>&1 && "${docker}" info >/dev/null 2>&1; }; then
    # No Docker engine: buildah (hack/cluster/image.sh; imports into `make cluster`'s node).
    exec bash "${root}/hack/cluster/image.sh" "${img}"
  fi
  command -v "${docker}" >/dev/null 2>&1 \
    || die "image: docker not found: install Docker or buildah (or set DOCKER=...) to build ${img}"
  "${docker}" info >/dev/null 2>&1 \
    || die "image: docker is installed but no engine answers (docker info failed);" \
           "start the Docker daemon"
  "${docker}" build -t "${img}" "${root}"
}

case "${1:-}" in
  deploy) deploy ;;
  undeploy) undeploy ;;
  render) need_kubectl; with_overlay "${kubectl}" kustomize ;;
  image) image ;;
  *) die "usage: $0 deploy|undeploy|render|image" ;;
esac
