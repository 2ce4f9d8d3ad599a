#!/usr/bin/env bash
# Runs one command inside the Debian unstable rootfs of hack/pythons_rootfs.sh, in the
# checkout (bind-mounted at the same path, so a venv made inside works by the same paths),
# with /proc, /dev, pip's cache and, when present, the control-plane binaries mounted.
#
# The mounts are made in a private mount namespace of their own (unshare), so the host never
# sees them and they end with the command whatever way it ends; they are also unmounted on
# exit. After the command this script checks that nothing under the rootfs is mounted in the
# host's namespace and fails if something is.
#
# Usage: bash hack/in_rootfs.sh ROOTFS COMMAND...   (root only; COMMAND runs with bash -c)
# Environment passed through: PYTHON_GIL, PYTEST_ADDOPTS, CI and two PIP_ settings.
set -euo pipefail
rootfs="$1"
shift
here="$(cd "$(dirname "$0")/.." && pwd)"
pip_cache="${HOME}/.cache/pip"
controlplane="${HOME}/.cache/pyctrl/controlplane"
mkdir -p "${pip_cache}"
envs=(PATH=/usr/local/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 TERM=dumb)
for name in PYTHON_GIL PYTEST_ADDOPTS CI PIP_DEFAULT_TIMEOUT PIP_DISABLE_PIP_VERSION_CHECK; do
  [[ -n "${!name:-}" ]] && envs+=("${name}=${!name}")
done
rc=0
unshare --mount --propagation private bash -euo pipefail -c '
  rootfs="$1" here="$2" pip_cache="$3" controlplane="$4"
  shift 4
  mounted=()
  unmount_all() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" || true; done
  }
  trap unmount_all EXIT
  bind() {  # bind SOURCE TARGET-IN-ROOTFS
    mkdir -p "${rootfs}$2"
    mount --rbind "$1" "${rootfs}$2"
    mount --make-rslave "${rootfs}$2"
    mounted+=("${rootfs}$2")
  }
  mount -t proc proc "${rootfs}/proc"
  mounted+=("${rootfs}/proc")
  bind /dev /dev
  bind "${here}" "${here}"
  bind "${pip_cache}" /root/.cache/pip
  if [[ -d "${controlplane}" ]]; then bind "${controlplane}" /root/.cache/pyctrl/controlplane; fi
  cp /etc/resolv.conf "${rootfs}/etc/resolv.conf"
  # The host'"'"'s trust store (it may hold a proxy'"'"'s CA that pip on the host relies on).
  mount --bind -o ro /etc/ssl/certs/ca-certificates.crt "${rootfs}/etc/ssl/certs/ca-certificates.crt"
  mounted+=("${rootfs}/etc/ssl/certs/ca-certificates.crt")
  chroot "${rootfs}" /usr/bin/env -i "$@"
' _ "${rootfs}" "${here}" "${pip_cache}" "${controlplane}" \
  "${envs[@]}" /bin/bash -c "cd '${here}' && $*" || rc=$?
if leftover="$(awk -v r="${rootfs}" '$5 == r || index($5, r "/") == 1 {print $5}' \
    /proc/self/mountinfo)" && [[ -n "${leftover}" ]]; then
  echo "in_rootfs: still mounted after the run: ${leftover}" >&2
  exit 3
fi
exit "${rc}"
