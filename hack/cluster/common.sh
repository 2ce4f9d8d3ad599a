# Shared settings of hack/cluster/*.sh (sourced, not run).
#
# Paths:
#   cache  ${XDG_CACHE_HOME:-$HOME/.cache}/pyctrl/node: the local images (OCI archives) and
#          buildah's storage; kept across clusters.
#   state  ${PYCTRL_CLUSTER_DIR:-/var/lib/pyctrl-cluster}: everything one running cluster owns
#          (certs, etcd data, containerd root and state, kubelet root, logs, pids, the host
#          snapshot taken before it started); removed by down.sh.
# The node: a dummy (or port-less bridge) interface ${node_if} holding ${node_ip} (TEST-NET-1, never routed), pods
# on the CNI bridge ${cni_bridge} in ${pod_cidr}, services in ${service_cidr}.

cluster_here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "${cluster_here}/../.." && pwd)"
node_cache="${XDG_CACHE_HOME:-${HOME}/.cache}/pyctrl/node"
state="${PYCTRL_CLUSTER_DIR:-/var/lib/pyctrl-cluster}"
node_if="pyctrl0"
node_ip="192.0.2.10"
node_name="pyctrl-node"
cni_bridge="pyctrl-cni0"
pod_cidr="10.244.0.0/24"
service_cidr="10.0.0.0/24"
apiserver_port=6443
pause_image="registry.k8s.io/pause:3.10"
busybox_image="docker.io/library/busybox:1.36"
base_image="localhost/pyctrl/python:3.11-bookworm"
containerd_sock="${state}/run/containerd/containerd.sock"

# buildah on its own storage (vfs: no overlay mounts left on the host) under the cache.
buildah_() {
  "${BUILDAH:-buildah}" --root "${node_cache}/buildah/storage" --runroot "${node_cache}/buildah/run" \
    --storage-driver vfs "$@"
}

# Made on their own: /etc/cni (buildah's CNI lock), /var/lib/containers (its blob-info cache),
# /run/mount (libmount's, when debootstrap mounts). buildah_guard_host records which of them
# are missing, buildah_unguard_host (call it on EXIT) removes those again.
buildah_created=()
buildah_guard_host() {
  local p
  for p in /etc/cni /var/lib/containers /run/mount; do
    [[ -e "${p}" ]] || buildah_created+=("${p}")
  done
}
buildah_unguard_host() {
  if (( ${#buildah_created[@]} )); then rm -rf "${buildah_created[@]}"; fi
}

ctr_() { ctr --address "${containerd_sock}" -n k8s.io "$@"; }

log() { echo "cluster: $*" >&2; }
die() { echo "cluster: $*" >&2; exit 1; }
