# The two commands a newcomer needs are `make run` and `make test` (see README.md).
# Everything else here is what those two depend on.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: run test setup controlplane models lint typecheck unit integration scale bench clean \
	deploy undeploy image urllib3-range docs pythons dist

setup: $(VENV)/.installed
	@bash hack/bubblewrap.sh

# requirements/dev.lock pins the dev tools (ruff, mypy, pytest, ...) and everything else the
# dev extra pulls in, so a tool release cannot turn make test red on its own.
$(VENV)/.installed: pyproject.toml requirements/dev.lock
	@bash hack/prereqs.sh python $(PYTHON)
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet --config-settings editable_mode=compat \
		-c requirements/dev.lock -e '.[dev]'
	touch $@

# Builds etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok from
# the Go module proxy once (cached under ~/.cache/pyctrl/controlplane), or uses
# $KUBEBUILDER_ASSETS (which has no kube-scheduler or kwok: pods-mode tests then skip).
controlplane:
	@bash hack/prereqs.sh go
	bash hack/controlplane/build.sh >/dev/null

# pyctrl/models from the pinned Kubernetes version's OpenAPI spec: the Go module cache's copy
# when it is there (it then refreshes hack/models-openapi.json), else the committed snapshot.
models: setup
	$(VENV)/bin/python hack/gen_models.py

lint: setup
	$(VENV)/bin/ruff check .

typecheck: setup
	$(VENV)/bin/mypy --strict

unit: setup
	$(VENV)/bin/pytest -q tests/unit $(PYTEST_ARGS)

# The unit suite on the oldest and the newest urllib3 pyproject.toml allows (each pip-installed
# into a temporary directory over the venv), so a urllib3 release cannot silently switch the
# paths pyctrl.kube takes through urllib3's internals.
urllib3-range: setup
	PY=$(PY) bash hack/urllib3_range.sh $(PYTEST_ARGS)

# The sdist and the wheel (pyctrl-k8s) into dist/; tests/integration/test_dist.py installs the
# wheel into a clean venv and runs its commands.
dist: setup
	rm -rf dist
	$(PY) -m build --outdir dist .

# The unit suite and mypy on each CPython the classifiers name (3.11-3.15) and a free-threaded
# 3.14t where installed, each in its own venv (.venv3X): from the host (PATH, pyenv), else as
# root from a cached Debian unstable rootfs (hack/pythons_rootfs.sh); CI runs it.
pythons:
	bash hack/pythons.sh $(PYTEST_ARGS)

# The docs site (mkdocs.yml: README, docs/*.md, the API reference from the docstrings) into
# site/, strict: a broken link, anchor or cross-reference, or a docstring warning, fails.
docs: setup
	$(VENV)/bin/mkdocs build --strict

# The integration tests run on IT_WORKERS pytest-xdist workers, each with its own control
# planes; most of their time is waiting (minute ticks, lease expiry, restarts), so more
# workers than cores pays. tests/integration/conftest.py groups and orders them.
# IT_WORKERS=0 runs them in this one process, in file order.
IT_WORKERS ?= 4
IT_ARGS = $(if $(filter 0,$(IT_WORKERS)),,-n $(IT_WORKERS) --dist loadgroup --no-loadscope-reorder)

integration: setup controlplane
	$(VENV)/bin/pytest -q $(IT_ARGS) tests/integration $(PYTEST_ARGS)

# The sharding scale test at the issue's size (3 replica processes, SCALE_CRONJOBS CronJobs,
# the leader SIGKILLed mid-tick), alone: about 4-6 minutes of which 2-3 wait for the tick.
# make test runs the same test and assertions at 300 CronJobs; CI runs this after make test
# (docs/DEVELOPMENT.md, "The scale test", says what each size proves).
SCALE_CRONJOBS ?= 3000
scale: setup controlplane
	PYCTRL_SCALE_CRONJOBS=$(SCALE_CRONJOBS) $(VENV)/bin/pytest -q \
		tests/integration/test_sharding_scale.py $(PYTEST_ARGS)

# Two stages: the CPU-bound checks (ruff, mypy, the unit tests, the docs build) beside the
# control-plane build, then the integration tests alone. Running them all at once saves a
# minute or two on a quiet machine, but starves the integration tests' lease renewals and
# real-time deadlines on a 2-core one (docs/DEVELOPMENT.md, "How long make test takes").
test: setup
	@$(MAKE) --no-print-directory -j2 --output-sync=target controlplane lint typecheck unit docs
	@$(MAKE) --no-print-directory integration

# A throwaway local control plane; `make run CONTEXT=name` runs on that kubeconfig context.
run: setup controlplane
	$(PY) hack/run.py $(if $(CONTEXT),--context=$(CONTEXT))

# Install into the cluster of the current kubeconfig context (see README "Installing"): the
# CRD first (server-side), then OVERLAY (default manifests/default: base + webhook, needs
# cert-manager; manifests/base needs nothing else). IMG=registry/name:tag sets the image.
# undeploy reverses it and keeps the CRD (so CronJobs and their Jobs) unless UNINSTALL_CRD=1.
KUBECTL ?= kubectl
OVERLAY ?= manifests/default
IMG     ?= pyctrl/cronjob-controller:dev
DEPLOY_ENV = KUBECTL="$(KUBECTL)" CONTEXT="$(CONTEXT)" OVERLAY="$(OVERLAY)" IMG="$(IMG)" \
	UNINSTALL_CRD="$(UNINSTALL_CRD)"

deploy:
	@$(DEPLOY_ENV) bash hack/deploy.sh deploy

undeploy:
	@$(DEPLOY_ENV) bash hack/deploy.sh undeploy

image:
	@$(DEPLOY_ENV) DOCKER="$(or $(DOCKER),docker)" BUILDAH="$(or $(BUILDAH),buildah)" \
		bash hack/deploy.sh image

clean:
	rm -rf $(VENV) .venv3?? .mypy_cache .ruff_cache .pytest_cache site

# One real node on this machine (root; no Docker, no registry): hack/cluster/up.sh, README
# "A real node". cluster-down stops it and restores every host change it made.
# PYCTRL_CLUSTER_APT=1 lets it apt-get install the missing Debian packages.
.PHONY: cluster cluster-down
cluster:
	@bash hack/prereqs.sh go
	@bash hack/cluster/up.sh

cluster-down:
	@bash hack/cluster/down.sh

# cert-manager on that node, built from source (its images are on quay.io, unreachable here):
# hack/cluster/cert_manager.sh builds v1.11.5's controller, webhook and cainjector from the Go
# module proxy (~16 min once, cached), imports them and installs its chart. Run it before
# `make deploy` of an overlay with the webhook (manifests/default, manifests/sharded).
.PHONY: cluster-cert-manager
cluster-cert-manager:
	@bash hack/cluster/cert_manager.sh

# e2e on the real node, with the controller as the deployed pod (tests/e2e; issue 34):
#   make cluster && make image && make deploy OVERLAY=manifests/base && make e2e
# Not part of `make test` or CI (see README "A real node").
.PHONY: e2e
e2e: setup
	@test -f "$${PYCTRL_E2E_KUBECONFIG:-/var/lib/pyctrl-cluster/kubeconfig}" \
		|| { echo "e2e: no node: make cluster && make image && make deploy first" >&2; exit 1; }
	$(VENV)/bin/pytest -q tests/e2e $(PYTEST_ARGS)

# The integration suite's CronJob tests on that node through PYCTRL_TEST_KUBECONFIG, with the
# deployed controller running beside them (hack/cluster/integration.sh says what it deselects).
.PHONY: e2e-integration
e2e-integration: setup
	@PYTEST=$(VENV)/bin/pytest bash hack/cluster/integration.sh $(PYTEST_ARGS)
