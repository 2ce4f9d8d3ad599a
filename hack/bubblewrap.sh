#!/usr/bin/env bash
# Best effort: make `bwrap` (bubblewrap) available for tests/integration/test_container_run.py,
# which runs the controller as the container image would (read-only root, uid 65532, no
# capabilities) without a Docker engine.
#
#   hack/bubblewrap.sh     -> exit 0 always; installs Debian's `bubblewrap` with apt-get when
#                             bwrap is missing, apt-get exists and we are root; otherwise says
#                             in one line why the sandboxed-run test will skip.
#
# Never fails `make setup`/`make test`: without bwrap that one test skips with its reason.
set -uo pipefail

if command -v bwrap >/dev/null 2>&1; then
  exit 0
fi
why=""
if ! command -v apt-get >/dev/null 2>&1; then
  why="apt-get not found"
elif [[ "$(id -u)" != "0" ]]; then
  why="not root (run: sudo apt-get install bubblewrap)"
else
  export DEBIAN_FRONTEND=noninteractive
  # Try the package lists we have first; refresh them only if that fails.
  if ! timeout 300 apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null 2>&1; then
    timeout 300 apt-get update -qq >/dev/null 2>&1 || true
    timeout 300 apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null 2>&1 || true
  fi
  command -v bwrap >/dev/null 2>&1 && exit 0
  why="apt-get install bubblewrap failed"
fi
echo "note: bwrap (bubblewrap) is not available (${why}); the sandboxed container-run test will skip" >&2
exit 0
