#!/usr/bin/env bash
# The unit suite and mypy --strict on every CPython that pyproject.toml's classifiers name
# and this machine has (python3.X on PATH, else ~/.pyenv/versions/3.X.*), each in its own
# venv in the checkout (.venv3X, git-ignored; 3.11 is `make setup`'s .venv when that is
# 3.11), installed with the test, docs and bench extras (what the unit suite and mypy import)
# under requirements/dev.lock's pins, refreshed
# when pyproject.toml or the lock changes. A version that is not installed is reported and
# skipped; any failure fails the run (after all ran).
#
# Usage: bash hack/pythons.sh [extra pytest args...]
# PYTHONS="3.12 3.13" picks versions; UNIT_PATHS (default tests/unit) what pytest runs.
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cd "${here}"
read -r -a paths <<<"${UNIT_PATHS:-tests/unit}"
args=(-q "${paths[@]}" "$@")
versions="${PYTHONS:-$(python3 - <<'PY'
import re, tomllib
classifiers = tomllib.load(open("pyproject.toml", "rb"))["project"]["classifiers"]
print(" ".join(m.group(1) for c in classifiers
               if (m := re.fullmatch(r"Programming Language :: Python :: (3\.\d+)", c))))
PY
)}"
find_python() {  # the first candidate that runs and is that version (pyenv shims may not)
  local v="$1" p
  for p in "$(command -v "python${v}")" "${PYENV_ROOT:-${HOME}/.pyenv}"/versions/"${v}".*/bin/python; do
    if [[ -x "${p}" ]] && "${p}" -c "import sys; sys.exit(sys.version_info[:2] != (${v/./, }))" \
        2>/dev/null; then
      echo "${p}"
      return 0
    fi
  done
  return 1
}
failed=()
for v in ${versions}; do
  venv=".venv${v/./}"
  if [[ -x .venv/bin/python ]] && [[ "$(.venv/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])')" == "${v}" ]]; then
    venv=".venv"
  elif ! python="$(find_python "${v}")"; then
    echo "=== Python ${v}: not installed, skipped"
    continue
  elif [[ ! -f "${venv}/.installed" || pyproject.toml -nt "${venv}/.installed" \
          || requirements/dev.lock -nt "${venv}/.installed" ]]; then
    echo "=== Python ${v}: ${venv} from ${python}"
    "${python}" -m venv "${venv}" \
      && "${venv}/bin/pip" install --quiet --upgrade pip \
      && "${venv}/bin/pip" install --quiet --config-settings editable_mode=compat \
           -c requirements/dev.lock -e '.[test,docs,bench]' \
      && touch "${venv}/.installed" || { failed+=("${v} (install)"); continue; }
  fi
  echo "=== Python ${v} ($(${venv}/bin/python -V)): unit suite"
  "${venv}/bin/python" -m pytest -p no:cacheprovider "${args[@]}" || failed+=("${v} (unit)")
  echo "=== Python ${v}: mypy --strict --python-version ${v}"
  "${venv}/bin/mypy" --strict --python-version "${v}" --cache-dir ".mypy_cache/${v}" \
    || failed+=("${v} (mypy)")
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "pythons: failed on ${failed[*]}" >&2
  exit 1
fi
