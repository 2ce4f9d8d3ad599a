#!/usr/bin/env bash
# The control-plane build and its pinned Go modules live in the package, so that the wheel
# ships them for `pyctrl envtest install`: pyctrl/testing/envtest/gomod/build.sh (its header
# is the contract). This path stays for make and the hack/ scripts.
set -euo pipefail
exec bash "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/pyctrl/testing/envtest/gomod/build.sh" "$@"
