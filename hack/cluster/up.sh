#!/usr/bin/env bash
# `make cluster`: one real node on this machine (root, cgroup v1 or v2, no Docker, no registry).
#
#   etcd, kube-apiserver (Node,RBAC + NodeRestriction), kube-controller-manager (all
#   controllers), kube-scheduler, containerd (Debian's 1.6, runc), kubelet and kube-proxy
#   (iptables mode) built from the same k8s.io/kubernetes module as the control plane
#   (hack/controlplane/build.sh --node), pods on a CNI bridge (Debian's plugins).
#
# Contract:
#   - Prerequisites are checked first; the missing Debian packages are installed with apt-get
#     only when PYCTRL_CLUSTER_APT=1, else named in the error.
#   - The host's state is recorded (hoststate.py save) before the first change; down.sh puts
#     every change back and fails if anything differs from that record.
#   - Everything the cluster owns lives under the state directory (common.sh); its processes
#     are detached (setsid) and outlive this script; their logs are in <state>/logs.
#   - Local images (images.sh: pause, busybox) are imported into the node's containerd; pods
#     must use imagePullPolicy IfNotPresent or Never (no registry is reachable).
#   - `up.sh --prepare` stops after the prerequisites, the binaries and the local images:
#     everything but the host changes (CI records the host after it, .ci/run).
#   - On success stdout carries only the admin kubeconfig's path; the lines to use it go to
#     stderr. A second call while the cluster runs only prints the path. A failure mid-way
#     runs down.sh, so nothing is left behind.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

[[ "$(id -u)" == 0 ]] || die "needs root (a kubelet manages cgroups, mounts and iptables)"

if [[ -f "${state}/kubeconfig" && -f "${state}/pids/kubelet.pid" ]] \
    && kill -0 "$(cat "${state}/pids/kubelet.pid")" 2>/dev/null; then
  log "already up"
  echo "${state}/kubeconfig"
  exit 0
fi
[[ -e "${state}" ]] && die "${state} exists from an earlier cluster: run hack/cluster/down.sh (make cluster-down)"

# -- prerequisites ---------------------------------------------------------------------------
declare -A pkg_of=(
  [containerd]=containerd [runc]=runc [ctr]=containerd [iptables]=iptables
  [ip6tables]=iptables [conntrack]=conntrack [ip]=iproute2 [openssl]=openssl
  [buildah]=buildah [gcc]=gcc [busybox]=busybox-static [debootstrap]=debootstrap
  [ss]=iproute2 [python3]=python3 [flock]=util-linux [nft]=nftables [go]=golang
)
missing=()
for tool in "${!pkg_of[@]}"; do
  [[ "${tool}" == go ]] && continue
  command -v "${tool}" >/dev/null 2>&1 || missing+=("${pkg_of[${tool}]}")
done
[[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/loopback ]] \
  || missing+=(containernetworking-plugins)
if (( ${#missing[@]} )); then
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  if [[ "${PYCTRL_CLUSTER_APT:-0}" == 1 ]]; then
    log "installing ${missing[*]} (apt-get)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2
  else
    die "missing Debian packages: ${missing[*]} (apt-get install them, or PYCTRL_CLUSTER_APT=1)"
  fi
fi
command -v go >/dev/null 2>&1 || [[ -x "$(ls -d ~/.cache/pyctrl/controlplane/*/kubelet 2>/dev/null | head -1)" ]] \
  || die "Go >= 1.25 is needed to build kubelet and kube-proxy once (hack/prereqs.sh go)"

bin="$(bash "${repo_root}/hack/controlplane/build.sh" --node)"
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy; do
  [[ -x "${bin}/${b}" ]] || die "${bin}/${b} missing after hack/controlplane/build.sh --node"
done
bash "${cluster_here}/images.sh" pause
bash "${cluster_here}/images.sh" busybox
if [[ "${1:-}" == --prepare ]]; then
  log "prepared: packages, binaries (${bin}) and local images; nothing started"
  exit 0
fi

# -- from here on the host changes: record it first, undo it on failure ----------------------
mkdir -p "${state}"/{pids,logs,pki,run}
python3 "${cluster_here}/hoststate.py" save "${state}/host-before.json"
up_ok=0
on_exit() {
  if [[ "${up_ok}" != 1 ]]; then
    log "start failed; the last log lines:"
    tail -n 5 "${state}"/logs/*.log >&2 2>/dev/null || true
    log "tearing down"
    bash "${cluster_here}/down.sh" >&2 || true
  fi
}
trap on_exit EXIT

# start NAME CMD...: run CMD detached, logging to <state>/logs/NAME.log.
start() {
  local name="$1"; shift
  setsid "$@" >"${state}/logs/${name}.log" 2>&1 < /dev/null &
  echo $! > "${state}/pids/${name}.pid"
}
# wait_for WHAT SECONDS CMD...: poll CMD every 0.5 s.
wait_for() {
  local what="$1" secs="$2"; shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    (( SECONDS < deadline )) || die "${what} not ready after ${secs}s"
    sleep 0.5
  done
}

# -- the node's address --------------------------------------------------------------------
# A dummy interface where the kernel has them, else a bridge without ports (both hold a local
# address that nothing routes; this machine's kernel has no dummy driver).
ip link add "${node_if}" type dummy 2>/dev/null || ip link add "${node_if}" type bridge
ip addr add "${node_ip}/32" dev "${node_if}"
ip link set "${node_if}" up

# -- PKI -----------------------------------------------------------------------------------
pki="${state}/pki"
openssl_quiet() { openssl "$@" 2>/dev/null; }
openssl_quiet req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=pyctrl-cluster-ca" \
  -keyout "${pki}/ca.key" -out "${pki}/ca.crt"
# cert NAME SUBJECT [SANS]: a key and a CA-signed certificate (client and server usage).
cert() {
  local name="$1" subj="$2" sans="${3:-}"
  openssl_quiet req -newkey rsa:2048 -nodes -subj "${subj}" \
    -keyout "${pki}/${name}.key" -out "${pki}/${name}.csr"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=serverAuth,clientAuth"
    [[ -n "${sans}" ]] && echo "subjectAltName=${sans}"
  } > "${pki}/${name}.ext"
  openssl_quiet x509 -req -in "${pki}/${name}.csr" -CA "${pki}/ca.crt" -CAkey "${pki}/ca.key" \
    -CAcreateserial -days 2 -extfile "${pki}/${name}.ext" -out "${pki}/${name}.crt"
}
cert apiserver "/CN=kube-apiserver" \
  "IP:10.0.0.1,IP:${node_ip},IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost"
cert admin "/O=system:masters/CN=kubernetes-admin"
cert apiserver-kubelet "/O=system:masters/CN=kube-apiserver-kubelet-client"
cert kubelet "/O=system:nodes/CN=system:node:${node_name}"
cert kubelet-serving "/CN=${node_name}" "IP:${node_ip},DNS:${node_name}"
cert controller-manager "/CN=system:kube-controller-manager"
cert scheduler "/CN=system:kube-scheduler"
cert kube-proxy "/CN=system:kube-proxy"
openssl_quiet genrsa -out "${pki}/sa.key" 2048
openssl_quiet rsa -in "${pki}/sa.key" -pubout -out "${pki}/sa.pub"

# kubeconfig NAME: <state>/NAME.kubeconfig with NAME's client certificate.
kubeconfig() {
  local path="${state}/$1.kubeconfig"
  "${bin}/kubectl" config --kubeconfig="${path}" set-cluster pyctrl \
    --server="https://${node_ip}:${apiserver_port}" --certificate-authority="${pki}/ca.crt" \
    --embed-certs >/dev/null
  "${bin}/kubectl" config --kubeconfig="${path}" set-credentials "$1" \
    --client-certificate="${pki}/$1.crt" --client-key="${pki}/$1.key" --embed-certs >/dev/null
  "${bin}/kubectl" config --kubeconfig="${path}" set-context pyctrl --cluster=pyctrl \
    --user="$1" >/dev/null
  "${bin}/kubectl" config --kubeconfig="${path}" use-context pyctrl >/dev/null
}
for k in admin kubelet controller-manager scheduler kube-proxy; do kubeconfig "${k}"; done
kc() { "${bin}/kubectl" --kubeconfig="${state}/admin.kubeconfig" "$@"; }

# -- control plane ---------------------------------------------------------------------------
start etcd "${bin}/etcd" --name=pyctrl --data-dir="${state}/etcd" \
  --listen-client-urls="http://${node_ip}:2379" --advertise-client-urls="http://${node_ip}:2379" \
  --listen-peer-urls="http://${node_ip}:2380" \
  --initial-advertise-peer-urls="http://${node_ip}:2380" \
  --initial-cluster="pyctrl=http://${node_ip}:2380" --log-level=warn
start kube-apiserver "${bin}/kube-apiserver" \
  --etcd-servers="http://${node_ip}:2379" \
  --bind-address="${node_ip}" --secure-port="${apiserver_port}" --advertise-address="${node_ip}" \
  --cert-dir="${state}/apiserver" \
  --tls-cert-file="${pki}/apiserver.crt" --tls-private-key-file="${pki}/apiserver.key" \
  --client-ca-file="${pki}/ca.crt" \
  --kubelet-client-certificate="${pki}/apiserver-kubelet.crt" \
  --kubelet-client-key="${pki}/apiserver-kubelet.key" \
  --kubelet-certificate-authority="${pki}/ca.crt" \
  --kubelet-preferred-address-types=InternalIP,Hostname \
  --service-account-key-file="${pki}/sa.pub" --service-account-signing-key-file="${pki}/sa.key" \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-cluster-ip-range="${service_cidr}" \
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
  --allow-privileged=true --v=1
wait_for kube-apiserver 90 kc get --raw /readyz
start kube-controller-manager "${bin}/kube-controller-manager" \
  --kubeconfig="${state}/controller-manager.kubeconfig" \
  --authentication-kubeconfig="${state}/controller-manager.kubeconfig" \
  --authorization-kubeconfig="${state}/controller-manager.kubeconfig" \
  --controllers='*' --use-service-account-credentials=true --leader-elect=false \
  --bind-address="${node_ip}" --secure-port=10257 --cert-dir="${state}/kcm" \
  --service-account-private-key-file="${pki}/sa.key" --root-ca-file="${pki}/ca.crt" \
  --cluster-signing-cert-file="${pki}/ca.crt" --cluster-signing-key-file="${pki}/ca.key" \
  --v=1
start kube-scheduler "${bin}/kube-scheduler" --kubeconfig="${state}/scheduler.kubeconfig" \
  --authentication-kubeconfig="${state}/scheduler.kubeconfig" \
  --authorization-kubeconfig="${state}/scheduler.kubeconfig" \
  --leader-elect=false --bind-address="${node_ip}" --secure-port=10259 --v=1

# -- containerd ------------------------------------------------------------------------------
mkdir -p "${state}/cni/net.d"
cat > "${state}/cni/net.d/10-pyctrl.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "pyctrl",
  "plugins": [
    {"type": "bridge", "bridge": "${cni_bridge}", "isGateway": true, "ipMasq": true,
     "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "${state}/cni/ipam",
              "ranges": [[{"subnet": "${pod_cidr}"}]], "routes": [{"dst": "0.0.0.0/0"}]}}
  ]
}
EOF
cat > "${state}/containerd.toml" <<EOF
version = 2
root = "${state}/containerd/root"
state = "${state}/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "${containerd_sock}"
[ttrpc]
  address = "${containerd_sock}.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "${state}/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${pause_image}"
  # The sandbox has no CAP_SYS_RESOURCE: without this every sandbox fails to start
  # ("can't get final child's PID from pipe").
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${state}/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "${state}/runc"
EOF
start containerd containerd --config "${state}/containerd.toml"
wait_for containerd 30 ctr_ version
for image in pause busybox; do
  ctr_ images import "${node_cache}/images/${image}.tar" >/dev/null
done

# -- kubelet and kube-proxy ------------------------------------------------------------------
cat > "${state}/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${node_ip}
port: 10250
readOnlyPort: 0
healthzBindAddress: ${node_ip}
healthzPort: 10248
tlsCertFile: ${pki}/kubelet-serving.crt
tlsPrivateKeyFile: ${pki}/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: ${pki}/ca.crt}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://${containerd_sock}
podLogsDir: ${state}/pod-logs
staticPodPath: ""
resolvConf: /etc/resolv.conf
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "50Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
evictionPressureTransitionPeriod: 10s
EOF
start kubelet "${bin}/kubelet" --config="${state}/kubelet.yaml" \
  --kubeconfig="${state}/kubelet.kubeconfig" --root-dir="${state}/kubelet" \
  --hostname-override="${node_name}" --node-ip="${node_ip}" --v=1
cat > "${state}/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: ${state}/kube-proxy.kubeconfig}
hostnameOverride: ${node_name}
bindAddress: ${node_ip}
healthzBindAddress: ${node_ip}:10256
metricsBindAddress: ${node_ip}:10249
clusterCIDR: ${pod_cidr}
iptables: {localhostNodePorts: false}
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
start kube-proxy "${bin}/kube-proxy" --config="${state}/kube-proxy.yaml" --v=1

wait_for "node ${node_name}" 120 kc wait --for=condition=Ready "node/${node_name}" --timeout=2s
wait_for "the default ServiceAccount" 60 kc -n default get serviceaccount default
wait_for "kube-root-ca.crt" 60 kc -n default get configmap kube-root-ca.crt
cp "${state}/admin.kubeconfig" "${state}/kubeconfig"
up_ok=1
log "up: node ${node_name} Ready ($(ls "${bin}"/kubelet >/dev/null; "${bin}/kubelet" --version))"
log "use it: export KUBECONFIG=${state}/kubeconfig PATH=${bin}:\$PATH"
log "tear it down (restores the host): make cluster-down"
echo "${state}/kubeconfig"
