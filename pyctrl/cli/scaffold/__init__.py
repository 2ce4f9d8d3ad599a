"""``pyctrl init`` and ``pyctrl create api|webhook``: an operator project, scaffolded.

Contract:

* ``pyctrl init NAME --group G [--domain D] [--dir PATH]`` writes an ordinary Python project
  into ``PATH`` (default ``./NAME``): ``pyproject.toml`` pinning ``pyctrl-k8s`` to the
  running version, the package ``NAME`` with dashes as underscores (``__main__`` with
  leader election, probes and metrics; ``wiring.setup(manager)``), tests, a Dockerfile,
  kustomize manifests under ``config/``, a Makefile (``test``, ``run``, ``manifests``,
  ``image``, ``deploy``, ``undeploy``), a README, a CI script and the ``PROJECT`` record.
  Kinds come with ``create api`` (as kubebuilder: init is the project, create api a kind).
* ``pyctrl create api --kind K [--version V]`` (in the project, or ``--dir``) adds the kind
  (``api/V/k.py``), its controller (``controllers/k.py``), its wiring, a sample and tests;
  for a kind the project has, a new ``V`` adds that version only (served, not stored).
* ``pyctrl create webhook --kind K [--conversion]`` adds K's defaulting and validating
  admission webhook and wires ``config/webhook`` (Service, cert-manager certificate, the
  Deployment's webhook server) into ``config/default``; ``--conversion`` (K with two
  versions or more) adds K's conversion webhook and declares it on every version.
* Both then run ``pyctrl gen crd``, ``gen rbac`` and ``gen webhook`` (what ``make manifests``
  runs) unless ``--no-manifests``.

Scaffolding again never overwrites a file the user has (:mod:`pyctrl.cli.scaffold.plan`):
files are written once and kept when present; new entries go into the shared files (the
wiring module, the Makefile, config/default, a kind's modules when it gets a conversion)
at their ``# +pyctrl:scaffold:<region>`` marker; the
generated manifests (``config/crd``, ``config/rbac/role.yaml``) belong to ``pyctrl gen``;
``PROJECT`` belongs to the scaffold. ``--force`` rewrites the scaffold's files over the
user's. A kind already in ``PROJECT`` is refused (``--force`` to scaffold it again); a
missing marker is refused naming the file, before anything is written. Usage errors exit 2
with one line (:class:`pyctrl.cli.UsageError`).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pyctrl._version import __version__
from pyctrl.cli import read_old
from pyctrl.cli.scaffold.project import Project, Resource

__all__ = ["api_module", "generate_manifests", "kind_values", "project_values"]


def project_values(project: Project) -> dict[str, str]:
    """The template values of a project."""
    return {"name": project.name, "package": project.package, "group": project.group,
            "domain": project.domain, "api_group": project.api_group,
            "pyctrl_version": __version__}


def kind_values(project: Project, res: Resource, version: str = "") -> dict[str, str]:
    """The template values of one kind of ``project``: of its storage version, or of
    another ``version`` of it (served, not stored)."""
    spoke = bool(version) and version != res.version
    note = (f"\n\nServed, not stored: the API server keeps {res.kind} objects as "
            f"``{res.version}`` and converts\n(``pyctrl create webhook --kind {res.kind} "
            "--conversion``).") if spoke else ""
    return {**project_values(project), "kind": res.kind, "lower": res.lower,
            "plural": res.plural, "plural_upper": res.plural.upper(),
            "version": version or res.version, "storage": " storage=False," if spoke else "",
            "version_note": note}


def api_module(project: Project, res: Resource, version: str = "") -> str:
    return f"{project.package}.api.{version or res.version}.{res.lower}"


def _api_modules(root: Path, project: Project) -> list[str]:
    """The API modules in the Makefile's order (the CRDs' header lists them as given, and
    ``make test`` checks the bytes), else every version of every kind."""
    listed = [line.split("+=", 1)[1].strip()
              for line in read_old(root / "Makefile").splitlines()
              if line.startswith("API_MODULES +=")]
    return listed or [api_module(project, r, v) for r in project.resources for v in r.versions]


def generate_manifests(root: Path, project: Project) -> list[str]:
    """Run ``pyctrl gen crd``, ``gen rbac`` and ``gen webhook`` as ``make manifests`` does,
    in ``root``;
    the problems (empty when both succeeded), each with the generator's own message."""
    py = [sys.executable, "-m", "pyctrl", "gen"]
    runs = []
    if project.resources:
        runs.append([*py, "crd", *_api_modules(root, project), "--conversion-annotation",
                     f"cert-manager.io/inject-ca-from={project.name}-system/"
                     f"{project.name}-serving-cert", "--out", "config/crd"])
    runs.append([*py, "rbac", f"{project.package}.wiring:setup",
                 "--name", f"{project.name}-manager", "--namespace", f"{project.name}-system",
                 "--leader-elect", "--metrics-secure",
                 "--service-account", f"{project.name}-controller-manager",
                 "--out", "config/rbac/role.yaml"])
    if any(r.webhook for r in project.resources):
        runs.append([*py, "webhook", f"{project.package}.wiring:setup_webhooks", "--service",
                     f"{project.name}-system/{project.name}-webhook-service",
                     "--name", project.name, "--annotation", "cert-manager.io/inject-ca-from="
                     f"{project.name}-system/{project.name}-serving-cert",
                     "--out", "config/webhook/manifests.yaml"])
    problems = []
    for argv in runs:
        done = subprocess.run(argv, cwd=root, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            problems.append(f"pyctrl gen {argv[4]}: {done.stderr.strip() or done.stdout}")
    return problems
