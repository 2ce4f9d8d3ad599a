"""A scaffolded project's ``make image``, ``deploy`` and ``undeploy`` (its hack/deploy.sh), with
recording docker, buildah and kubectl: the image is built by docker when its engine answers,
else by buildah (tagged with the name a kubelet resolves), FROM ``BASE_IMAGE`` when given,
and neither is one clear line; deploy applies and waits for the CRDs, then config/default
with the image set; undeploy keeps the CRDs unless ``UNINSTALL_CRD=1``. What the overlay
holds is tests/unit/scaffold/test_scaffold_manifests.py."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from pyctrl.cli import main

# Records its argv; `info` fails when FAKE_NO_ENGINE is set (docker without an engine).
FAKE = """#!/usr/bin/env bash
printf '%s %s\\n' "$(basename "$0")" "$*" >> "${FAKE_LOG}"
if [[ "$1" == info && -n "${FAKE_NO_ENGINE:-}" ]]; then exit 1; fi
exit 0
"""


@dataclass
class Run:
    returncode: int
    stderr: str
    calls: list[str]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("targets") / "shop"
    assert main(["init", "shop-operator", "--group", "shop", "--dir", str(root),
                 "--no-manifests"]) == 0
    assert main(["create", "api", "--kind", "Order", "--dir", str(root), "--no-manifests"]) == 0
    (root / "config" / "crd" / "orders.shop.example.com.yaml").write_text("kind: CRD\n")
    return root


@pytest.fixture
def fakes(tmp_path: Path) -> Path:
    for name in ("docker", "buildah", "kubectl"):
        (tmp_path / name).write_text(FAKE)
        (tmp_path / name).chmod(0o755)
    return tmp_path


def _make(project: Path, fakes: Path, target: str, *variables: str,
          no_engine: bool = False, **env: str) -> Run:
    log = fakes / "calls.log"
    log.unlink(missing_ok=True)
    environ = {**{k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS")},
               "FAKE_LOG": str(log), "FAKE_NO_ENGINE": "1" if no_engine else "",
               "DOCKER": str(fakes / "docker"), "BUILDAH": str(fakes / "buildah"),
               "KUBECTL": str(fakes / "kubectl"), **env}
    done = subprocess.run(["make", "-s", target, *variables], cwd=project, env=environ,
                          capture_output=True, text=True, timeout=60, check=False)
    calls = log.read_text().splitlines() if log.exists() else []
    return Run(done.returncode, done.stderr, calls)


def test_image_is_docker_when_its_engine_answers(project: Path, fakes: Path) -> None:
    run = _make(project, fakes, "image", "IMG=shop:1.0")
    assert run.returncode == 0, run.stderr
    assert run.calls == ["docker info", "docker build -t shop:1.0 ."]
    run = _make(project, fakes, "image", "IMG=shop:1.0",
                "BASE_IMAGE=localhost/pyctrl/python:3.11-bookworm")
    assert run.calls[-1] == ("docker build --build-arg "
                             "PYTHON_IMAGE=localhost/pyctrl/python:3.11-bookworm -t shop:1.0 .")


def test_image_is_buildah_without_a_docker_engine(project: Path, fakes: Path) -> None:
    run = _make(project, fakes, "image", "IMG=shop:1.0",
                "BASE_IMAGE=localhost/pyctrl/python:3.11-bookworm", no_engine=True)
    assert run.returncode == 0, run.stderr
    assert run.calls[0] == "docker info"
    build = run.calls[1].split()
    assert build[:5] == ["buildah", "bud", "--isolation", "chroot", "--layers=false"]
    assert build[-3:] == ["-t", "docker.io/library/shop:1.0", "."]
    assert "PYTHON_IMAGE=localhost/pyctrl/python:3.11-bookworm" in build
    run = _make(project, fakes, "image", "IMG=registry.example:5000/team/shop",
                no_engine=True)
    assert run.calls[1].endswith(" -t registry.example:5000/team/shop:latest .")
    assert "PYTHON_IMAGE" not in run.calls[1]


def test_image_without_docker_or_buildah_is_one_line(project: Path, fakes: Path) -> None:
    run = _make(project, fakes, "image", DOCKER=str(fakes / "none"),
                BUILDAH=str(fakes / "none"))
    assert run.returncode != 0
    assert "image: no Docker engine answers" in run.stderr
    assert [line for line in run.stderr.splitlines() if not line.startswith("make")] == [
        line for line in run.stderr.splitlines() if "image:" in line]
    assert run.calls == []


def test_deploy_applies_the_crds_first_then_the_overlay(project: Path, fakes: Path) -> None:
    run = _make(project, fakes, "deploy", "IMG=shop:1.0")
    assert run.returncode == 0, run.stderr
    crd = "config/crd/orders.shop.example.com.yaml"
    calls = [c for c in run.calls if "version" not in c]
    assert calls[:2] == [f"kubectl apply --server-side -f {crd}",
                         f"kubectl wait --for=condition=Established --timeout=60s -f {crd}"]
    # render | apply: the two run side by side, in either order.
    assert sorted(c.split(" /")[0] for c in calls[2:]) == [
        "kubectl apply --server-side -f -", "kubectl kustomize"]
    run = _make(project, fakes, "undeploy", "IMG=shop:1.0")
    assert run.returncode == 0, run.stderr
    assert not any(crd in c for c in run.calls)
    assert "kubectl delete --ignore-not-found --wait=false -f -" in run.calls
    run = _make(project, fakes, "undeploy", "UNINSTALL_CRD=1")
    assert run.calls[-1] == f"kubectl delete --ignore-not-found -f {crd}"
