#!/usr/bin/env bash
# The unit suite and mypy --strict on every CPython that pyproject.toml's classifiers name,
# plus free-threaded 3.14t where one is installed, each in its own venv in the checkout
# (.venv3X, git-ignored; 3.11 is `make setup`'s .venv when that is 3.11), installed with the
# test, docs and bench extras (what the unit suite and mypy import) under
# requirements/dev.lock's pins, refreshed when pyproject.toml or the lock changes.
#
# An interpreter is taken from the host (python3.X on PATH, else ~/.pyenv/versions/3.X.*),
# else, as root, from the Debian unstable rootfs of hack/pythons_rootfs.sh (built once and
# cached; 3.14 and 3.15 come from there on a Debian 12 host), where the venv is made and the
# suite runs through hack/in_rootfs.sh (the host's mounts are left as they were). 3.14 and
# later run the unit suite with -W error; a free-threaded "t" version runs it with the GIL off
# as such a build starts (not forced by PYTHON_GIL=0) and fails if an extension module turned
# it back on (PYCTRL_EXPECT_NO_GIL, tests/unit/conftest.py).
# A version that is not installed is reported and skipped; any failure fails the run (after
# all ran). Each step's seconds are printed.
#
# Usage: bash hack/pythons.sh [extra pytest args...]
# PYTHONS="3.12 3.14t" picks versions; UNIT_PATHS (default tests/unit) what pytest runs;
# INTEGRATION_PATHS (empty: none) the integration tests run on INTEGRATION_PYTHON (3.14), with
# the default warning filters (under -W error they find an SSL socket left open at exit).
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cd "${here}"
read -r -a paths <<<"${UNIT_PATHS:-tests/unit}"
# A small integration subset (a real apiserver from pyctrl.testing.envtest) on one new Python.
INTEGRATION_PYTHON="${INTEGRATION_PYTHON:-3.14}"
INTEGRATION_PATHS="${INTEGRATION_PATHS-tests/integration/test_typed_client.py tests/integration/test_configmap_mirror.py}"
versions="${PYTHONS:-$(python3 - <<'PY'
import re, tomllib
classifiers = tomllib.load(open("pyproject.toml", "rb"))["project"]["classifiers"]
print(" ".join(m.group(1) for c in classifiers
               if (m := re.fullmatch(r"Programming Language :: Python :: (3\.\d+)", c))), "3.14t")
PY
)}"
rootfs=""
find_python() {  # the first candidate that runs and is that version (pyenv shims may not)
  local v="$1" p want="${1%t}" ft=False
  [[ "${v}" == *t ]] && ft=True
  for p in "$(command -v "python${v}")" "${PYENV_ROOT:-${HOME}/.pyenv}"/versions/"${v}".*/bin/python; do
    if [[ -x "${p}" ]] && "${p}" -c "import sys, sysconfig; sys.exit(sys.version_info[:2] != (${want/./, })
or bool(sysconfig.get_config_var('Py_GIL_DISABLED')) != ${ft})" 2>/dev/null; then
      echo "${p}"
      return 0
    fi
  done
  return 1
}
rootfs_tried=""
ensure_rootfs() {  # sets rootfs to the unstable rootfs, built on first need; root only
  [[ -n "${rootfs}" ]] && return 0
  [[ -z "${rootfs_tried}" && "$(id -u)" == 0 ]] || return 1
  rootfs_tried=1
  local start=${SECONDS}
  rootfs="$(bash hack/pythons_rootfs.sh)" || { rootfs=""; echo "=== rootfs: build failed"; return 1; }
  echo "=== rootfs ${rootfs} ready in $((SECONDS - start))s"
}
failed=()
for v in ${versions}; do
  venv=".venv${v//./}"
  run=(bash -c)  # how a command line runs: here, or inside the rootfs
  if [[ -x .venv/bin/python ]] && [[ "$(.venv/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])')" == "${v}" ]]; then
    venv=".venv"
  elif python="$(find_python "${v}")"; then
    :
  elif ensure_rootfs && [[ -x "${rootfs}/usr/bin/python${v}" ]]; then
    python="/usr/bin/python${v}"
    run=(bash hack/in_rootfs.sh "${rootfs}")
  else
    echo "=== Python ${v}: not installed, skipped"
    continue
  fi
  if [[ "${venv}" != .venv && ( ! -f "${venv}/.installed" || pyproject.toml -nt "${venv}/.installed" \
        || requirements/dev.lock -nt "${venv}/.installed" ) ]]; then
    echo "=== Python ${v}: ${venv} from ${python}"
    start=${SECONDS}
    rm -rf "${venv}"
    "${run[@]}" "'${python}' -m venv ${venv} \
      && ${venv}/bin/pip install --quiet --upgrade pip \
      && ${venv}/bin/pip install --quiet --only-binary=:all: --config-settings editable_mode=compat \
           -c requirements/dev.lock -e '.[test,docs,bench]' \
      && touch ${venv}/.installed" || { failed+=("${v} (install)"); continue; }
    echo "=== Python ${v}: installed in $((SECONDS - start))s"
  fi
  flags=(-q -p no:cacheprovider)
  gil=""
  minor="${v#3.}"
  [[ "${minor%t}" -ge 14 ]] && flags+=(-W error)
  [[ "${v}" == *t ]] && gil="PYCTRL_EXPECT_NO_GIL=1"  # not PYTHON_GIL=0: that would hide a re-enable
  echo "=== Python ${v}: unit suite ${flags[*]} ${gil}"
  start=${SECONDS}
  "${run[@]}" "${gil} ${venv}/bin/python -VV && ${gil} ${venv}/bin/python -m pytest \
    ${flags[*]} $(printf '%q ' "${paths[@]}" "$@")" || failed+=("${v} (unit)")
  echo "=== Python ${v}: unit suite took $((SECONDS - start))s"
  if [[ "${v}" == "${INTEGRATION_PYTHON}" && -n "${INTEGRATION_PATHS}" ]]; then
    echo "=== Python ${v}: integration subset ${INTEGRATION_PATHS}"
    start=${SECONDS}
    "${run[@]}" "${venv}/bin/python -m pytest -q -p no:cacheprovider ${INTEGRATION_PATHS}" \
      || failed+=("${v} (integration)")
    echo "=== Python ${v}: integration subset took $((SECONDS - start))s"
  fi
  echo "=== Python ${v}: mypy --strict --python-version ${v%t}"
  start=${SECONDS}
  "${run[@]}" "${venv}/bin/mypy --strict --python-version ${v%t} --cache-dir .mypy_cache/${v}" \
    || failed+=("${v} (mypy)")
  echo "=== Python ${v}: mypy took $((SECONDS - start))s"
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "pythons: failed on ${failed[*]}" >&2
  exit 1
fi
