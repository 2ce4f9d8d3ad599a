#!/usr/bin/env bash
# Builds, once, the Debian unstable root filesystem that hack/pythons.sh runs CPython 3.14,
# 3.15 and free-threaded 3.14t in (Debian unstable's python3.14, python3.15 and
# python3.14-nogil packages need unstable's libc, so they cannot run on the host), and prints
# its directory. The host is not changed beyond the cache directory: debootstrap is installed
# from Debian if it is missing, and the mirror is the one the host's apt sources name.
#
# The rootfs is keyed by ROOTFS_KEY below (bump it when PACKAGES changes) and lives in
# ${PYCTRL_PYTHONS_CACHE:-~/.cache/pyctrl/pythons}/unstable-<key>; it is built into a
# temporary directory beside it and renamed when complete, under a lock, so a concurrent or
# interrupted build never leaves a half-built rootfs behind.
#
# Usage: bash hack/pythons_rootfs.sh   (root only; prints the rootfs directory on stdout)
set -euo pipefail
ROOTFS_KEY=2
PACKAGES="python3.14 python3.14-venv python3.15 python3.15-venv make procps iproute2"
cache="${PYCTRL_PYTHONS_CACHE:-${HOME}/.cache/pyctrl/pythons}"
rootfs="${cache}/unstable-${ROOTFS_KEY}"
if [[ -f "${rootfs}/.pyctrl-complete" ]]; then
  echo "${rootfs}"
  exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
  echo "pythons_rootfs: building the unstable rootfs needs root (debootstrap, chroot)" >&2
  exit 2
fi
mkdir -p "${cache}"
exec 9>"${cache}/.lock"
flock 9
if [[ -f "${rootfs}/.pyctrl-complete" ]]; then  # built while we waited for the lock
  echo "${rootfs}"
  exit 0
fi
mirror="$(grep -rhoE '^(URIs:[[:space:]]*|deb[[:space:]]+)https?://[^[:space:]]+/debian/?([[:space:]]|$)' \
  /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null \
  | grep -oE 'https?://[^[:space:]]+' | head -n 1 || true)"
if [[ -z "${mirror}" ]]; then
  echo "pythons_rootfs: no Debian mirror in /etc/apt/sources.list*" >&2
  exit 2
fi
if ! command -v debootstrap >/dev/null; then
  echo "pythons_rootfs: installing debootstrap from Debian" >&2
  apt-get update -qq >&2 && apt-get install -y -qq debootstrap >&2
fi
start=${SECONDS}
tmp="$(mktemp -d "${cache}/.build.XXXXXX")"
chmod 755 "${tmp}"  # apt downloads as _apt
cleanup() {
  # Anything mounted under the half-built rootfs first, then the directory itself.
  grep -F " ${tmp}/" /proc/mounts | awk '{print $2}' | sort -r | xargs -r -n 1 umount -l || true
  rm -rf --one-file-system "${tmp}"
}
trap cleanup EXIT
echo "pythons_rootfs: debootstrap unstable from ${mirror} into ${tmp}" >&2
debootstrap --variant=minbase --include=ca-certificates unstable "${tmp}" "${mirror}" >&2
cp /etc/resolv.conf "${tmp}/etc/resolv.conf"
# shellcheck disable=SC2086  # PACKAGES is a word list
chroot "${tmp}" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
  sh -c "apt-get -o Acquire::Check-Valid-Until=false update -qq && apt-get install -y -qq --no-install-recommends ${PACKAGES//$'\n'/ } \
         && apt-get clean && rm -rf /var/lib/apt/lists/*" >&2
date -u +%Y-%m-%dT%H:%M:%SZ >"${tmp}/.pyctrl-complete"
echo "pythons_rootfs: built in $((SECONDS - start))s" >&2
mv "${tmp}" "${rootfs}"
trap - EXIT
echo "${rootfs}"
