# The two commands a newcomer needs are `make run` and `make test` (see README.md).
# Everything else here is what those two depend on.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: run test setup controlplane lint typecheck unit integration bench clean

setup: $(VENV)/.installed
	@bash hack/bubblewrap.sh

$(VENV)/.installed: pyproject.toml
	@bash hack/prereqs.sh python $(PYTHON)
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[dev]'
	touch $@

# Builds etcd, kube-apiserver, kube-controller-manager and kubectl from the Go module proxy
# once (cached under ~/.cache/pyctrl/controlplane), or uses $KUBEBUILDER_ASSETS.
controlplane:
	@bash hack/prereqs.sh go
	bash hack/controlplane/build.sh >/dev/null

lint: setup
	$(VENV)/bin/ruff check .

typecheck: setup
	$(VENV)/bin/mypy --strict

unit: setup
	$(VENV)/bin/pytest -q tests/unit $(PYTEST_ARGS)

integration: setup controlplane
	$(VENV)/bin/pytest -q tests/integration $(PYTEST_ARGS)

test: setup controlplane lint typecheck
	$(VENV)/bin/pytest -q tests $(PYTEST_ARGS)

# A throwaway local control plane; `make run CONTEXT=name` runs on that kubeconfig context.
run: setup controlplane
	$(PY) hack/run.py $(if $(CONTEXT),--context=$(CONTEXT))

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
