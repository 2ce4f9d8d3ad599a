#!/usr/bin/env bash
# Runs the unit suite against the oldest and the newest urllib3 that pyproject.toml allows.
#
# pyctrl.kube leans on urllib3 beyond its request API (the lean transport opens urllib3's
# connection classes and drives them itself; watches read urllib3's response internals and
# call HTTPResponse.shutdown, new in urllib3 2.3), so a urllib3 release could silently switch
# a code path. Each version is installed with pip into its own temporary directory, put first
# on PYTHONPATH over the venv; nothing in the venv changes.
#
# Usage: bash hack/urllib3_range.sh [pytest args...]   (default: -q -x tests/unit)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
py="${PY:-${here}/.venv/bin/python}"
spec="$("${py}" - "${here}/pyproject.toml" <<'PY'
import sys, tomllib
deps = tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]
print(next(d for d in deps if d.replace(" ", "").startswith("urllib3")).replace(" ", ""))
PY
)"
lower="$(sed -n 's/.*>=\([0-9.]*\).*/\1/p' <<<"${spec}")"
if [[ -z "${lower}" ]]; then
  echo "urllib3_range.sh: no lower bound in pyproject's ${spec}" >&2
  exit 2
fi
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
args=("$@")
[[ ${#args[@]} -gt 0 ]] || args=(-q -x tests/unit)
for want in "urllib3==${lower}" "${spec}"; do
  dir="${tmp}/$(tr -c 'a-zA-Z0-9.' _ <<<"${want}")"
  "${py}" -m pip install --quiet --no-deps --upgrade --target "${dir}" "${want}"
  version="$(PYTHONPATH="${dir}" "${py}" -c 'import urllib3; print(urllib3.__version__)')"
  echo "== unit suite with urllib3 ${version} (${want})"
  (cd "${here}" && PYTHONPATH="${dir}:${here}${PYTHONPATH:+:${PYTHONPATH}}" \
    "${py}" -m pytest -p no:cacheprovider "${args[@]}")
done
