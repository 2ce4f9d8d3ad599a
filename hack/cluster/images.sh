#!/usr/bin/env bash
# Builds the images a node without a registry needs, once, into the cache (see common.sh):
#   pause    registry.k8s.io/pause:3.10 - a static C program that waits for SIGTERM and reaps
#            (the pod sandbox; containerd's sandbox_image names it)
#   busybox  docker.io/library/busybox:1.36 - Debian's busybox-static and its applet links
#            (what manifests/samples and the e2e Jobs run)
#   base     localhost/pyctrl/python:3.11-bookworm - `debootstrap --variant=minbase bookworm`
#            with python3 (3.11), python3-venv and python-is-python3: stands in for the
#            Dockerfile's python:3.11-slim-bookworm, which no registry here serves. It stays in
#            buildah's storage only (`make image` builds FROM it).
# pause and busybox land as docker archives in <cache>/images/*.tar (up.sh imports them into
# the node's containerd). An image is rebuilt only when its archive (or, for base, its marker
# file) is missing; each is written under a temporary name and renamed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

images="${node_cache}/images"
mkdir -p "${images}"
work="$(mktemp -d)"
rootfs="${work}/rootfs"
cleanup() {
  # debootstrap mounts /proc and /sys inside the root it builds; a failure mid-way must not
  # leave them mounted on the host.
  local m
  for m in $(awk -v r="${rootfs}" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r); do
    umount -l "${m}" || true
  done
  rm -rf "${work}"
  buildah_unguard_host
}
buildah_guard_host
trap cleanup EXIT

# archive NAME IMAGE: push IMAGE from buildah's storage to <images>/NAME.tar.
archive() {
  buildah_ push -q "$2" "docker-archive:${images}/.$1.tar.tmp:$2" >/dev/null
  mv -f "${images}/.$1.tar.tmp" "${images}/$1.tar"
}

build_pause() {
  [[ -f "${images}/pause.tar" ]] && return 0
  log "building ${pause_image}"
  cat > "${work}/pause.c" <<'EOF'
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>
static void quit(int sig) { (void)sig; _exit(0); }
static void reap(int sig) { (void)sig; while (waitpid(-1, NULL, WNOHANG) > 0) {} }
int main(void) {
  signal(SIGINT, quit);
  signal(SIGTERM, quit);
  signal(SIGCHLD, reap);
  for (;;) pause();
}
EOF
  gcc -static -Os -s -o "${work}/pause" "${work}/pause.c"
  local c
  c="$(buildah_ from scratch)"
  buildah_ copy -q "${c}" "${work}/pause" /pause >/dev/null
  buildah_ config --entrypoint '["/pause"]' --user 65535:65535 "${c}"
  buildah_ commit -q "${c}" "${pause_image}" >/dev/null
  buildah_ rm "${c}" >/dev/null
  archive pause "${pause_image}"
}

build_busybox() {
  [[ -f "${images}/busybox.tar" ]] && return 0
  log "building ${busybox_image}"
  [[ -x /bin/busybox ]] || die "busybox-static is not installed (/bin/busybox)"
  mkdir -p "${work}/bb/bin" "${work}/bb/tmp" "${work}/bb/etc"
  cp /bin/busybox "${work}/bb/bin/busybox"
  local applet
  for applet in $(/bin/busybox --list); do
    [[ "${applet}" == busybox ]] || ln -sf busybox "${work}/bb/bin/${applet}"
  done
  echo "root:x:0:0:root:/root:/bin/sh" > "${work}/bb/etc/passwd"
  echo "root:x:0:" > "${work}/bb/etc/group"
  chmod 1777 "${work}/bb/tmp"
  tar -C "${work}/bb" -cf "${work}/bb.tar" .
  local c
  c="$(buildah_ from scratch)"
  buildah_ add -q "${c}" "${work}/bb.tar" / >/dev/null
  buildah_ config --cmd '["sh"]' --env PATH=/bin "${c}"
  buildah_ commit -q "${c}" "${busybox_image}" >/dev/null
  buildah_ rm "${c}" >/dev/null
  archive busybox "${busybox_image}"
}

build_base() {
  [[ -f "${images}/base.done" ]] && return 0
  log "building ${base_image} (debootstrap bookworm minbase + python3; a few minutes)"
  debootstrap --variant=minbase --include=python3,python3-venv,python-is-python3 \
    bookworm "${rootfs}" http://deb.debian.org/debian >"${work}/debootstrap.log" 2>&1 \
    || { tail -20 "${work}/debootstrap.log" >&2; die "debootstrap failed"; }
  rm -rf "${rootfs}"/var/lib/apt/lists/* "${rootfs}"/var/cache/apt/*.bin \
    "${rootfs}"/var/cache/apt/archives/*.deb "${rootfs}"/var/log/* \
    "${rootfs}"/usr/share/doc/* "${rootfs}"/usr/share/man/* "${rootfs}"/usr/share/locale/*
  tar -C "${rootfs}" -cf "${work}/base.tar" .
  rm -rf "${rootfs}"
  local c
  c="$(buildah_ from scratch)"
  buildah_ add -q "${c}" "${work}/base.tar" / >/dev/null
  buildah_ config --cmd '["python3"]' --env LANG=C.UTF-8 \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "${c}"
  buildah_ commit -q "${c}" "${base_image}" >/dev/null
  buildah_ rm "${c}" >/dev/null
  touch "${images}/base.done"
}

case "${1:-all}" in
  all) build_pause; build_busybox; build_base ;;
  pause) build_pause ;;
  busybox) build_busybox ;;
  base) build_base ;;
  *) die "usage: $0 [all|pause|busybox|base]" ;;
esac
