"""`make deploy`, `make undeploy` and `make image` (hack/deploy.sh), with a recording kubectl.

deploy applies the CRD first (server-side) and waits for it, then the overlay with IMG set on a
temporary copy (the checkout is never edited, the copy is removed); undeploy goes in reverse
(webhook configurations, the overlay) and deletes the CRD only with UNINSTALL_CRD=1, saying
what that does to CronJobs and Jobs; image fails with one clear line when docker or its engine
is missing. The real apply against an apiserver is tests/integration/test_deploy.py.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]

FAKE_KUBECTL = """#!/usr/bin/env bash
printf '%s\\n' "$*" >> "${FAKE_LOG}"
if [[ " $* " == *" version "* && -n "${FAKE_UNREACHABLE:-}" ]]; then
  echo "The connection to the server localhost:8080 was refused" >&2
  exit 1
fi
if [[ "$1" == wait && -n "${FAKE_WAIT_FAILS:-}" ]]; then
  n="$(cat "${FAKE_LOG}.waits" 2>/dev/null || echo 0)"
  echo $((n + 1)) > "${FAKE_LOG}.waits"
  if (( n < FAKE_WAIT_FAILS )); then
    echo "error: .status.conditions accessor error: <nil> is of the type <nil>" >&2
    exit 1
  fi
fi
prev=""
for a in "$@"; do
  if [[ "${prev}" == "-k" ]]; then
    cp "${a}/kustomization.yaml" "${FAKE_LOG}.kustomization.yaml"
  fi
  prev="${a}"
done
"""


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    calls: list[str]  # without the reachability check (``checks``)
    kustomization: dict[str, object]
    checks: list[str]


@pytest.fixture
def kubectl(tmp_path: Path) -> Path:
    path = tmp_path / "kubectl"
    path.write_text(FAKE_KUBECTL)
    path.chmod(0o755)
    return path


REACHABLE = "version --request-timeout=5s"


def _make(tmp_path: Path, kubectl: Path, target: str, *, unreachable: bool = False,
          wait_fails: int = 0, **variables: str) -> Run:
    log = tmp_path / "calls.log"
    log.unlink(missing_ok=True)
    # Not the calling make's MAKEFLAGS: under `make -j2 unit` (make test) its jobserver is
    # not ours, and the child make would warn about it on stderr.
    env = {**{k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS")},
           "FAKE_LOG": str(log), "FAKE_UNREACHABLE": "1" if unreachable else "",
           "FAKE_WAIT_FAILS": str(wait_fails) if wait_fails else ""}
    argv = ["make", "-s", "-C", str(ROOT), target, f"KUBECTL={kubectl}",
            *(f"{k}={v}" for k, v in variables.items())]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    logged = log.read_text().splitlines() if log.exists() else []
    k_file = Path(f"{log}.kustomization.yaml")
    kustomization = yaml.safe_load(k_file.read_text()) if k_file.exists() else {}
    calls = [c for c in logged if REACHABLE not in c]
    return Run(done.returncode, done.stdout, done.stderr, calls, kustomization,
               [c for c in logged if REACHABLE in c])


def _temp_dir(call: str) -> Path:
    return Path(call.split(" -k ")[1].split(maxsplit=1)[0])


def test_deploy_applies_the_crd_server_side_first_then_the_overlay_with_img(
    tmp_path: Path, kubectl: Path,
) -> None:
    run = _make(tmp_path, kubectl, "deploy", IMG="registry.example:5000/team/cj:1.2",
                OVERLAY="manifests/base")
    assert run.returncode == 0, run.stderr
    crds = f"{ROOT}/crds/"
    assert run.calls[0] == f"apply --server-side --force-conflicts -f {crds}"
    assert run.calls[1] == f"wait --for=condition=Established --timeout=60s -f {crds}"
    assert run.calls[2].startswith("apply -k ") and len(run.calls) == 3
    assert run.kustomization["resources"] == ["manifests/base"]
    assert run.kustomization["images"] == [{"name": "pyctrl/cronjob-controller",
                                            "newName": "registry.example:5000/team/cj",
                                            "newTag": "1.2"}]
    temp = _temp_dir(run.calls[2])
    assert not temp.exists()  # removed afterwards
    assert not str(temp).startswith(str(ROOT))  # the checkout is never edited


def test_deploy_retries_the_wait_of_a_crd_without_conditions_yet(
    tmp_path: Path, kubectl: Path,
) -> None:
    # kubectl 1.35's wait fails at once on a CRD just created (no .status.conditions yet):
    # seen on a real node (make cluster), where `make deploy` stopped there.
    run = _make(tmp_path, kubectl, "deploy", OVERLAY="manifests/base", wait_fails=2)
    assert run.returncode == 0, run.stderr
    waits = [c for c in run.calls if c.startswith("wait ")]
    assert len(waits) == 3
    assert run.calls[-1].startswith("apply -k ")


@pytest.mark.parametrize(("img", "image"), [
    ("registry.example/cj@sha256:" + "a" * 64,
     {"newName": "registry.example/cj", "digest": "sha256:" + "a" * 64}),
    ("registry.example:5000/cj", {"newName": "registry.example:5000/cj", "newTag": "latest"}),
    ("cj:2.0", {"newName": "cj", "newTag": "2.0"}),
])
def test_img_forms(tmp_path: Path, kubectl: Path, img: str, image: dict[str, str]) -> None:
    run = _make(tmp_path, kubectl, "deploy", IMG=img)
    assert run.returncode == 0, run.stderr
    assert run.kustomization["resources"] == ["manifests/default"]  # the default overlay
    assert run.kustomization["images"] == [{"name": "pyctrl/cronjob-controller", **image}]


def test_deploy_refuses_an_overlay_outside_manifests(tmp_path: Path, kubectl: Path) -> None:
    run = _make(tmp_path, kubectl, "deploy", OVERLAY=str(tmp_path))
    assert run.returncode != 0
    assert "no kustomization.yaml" in run.stderr or "under manifests/" in run.stderr
    assert not [c for c in run.calls if " -k " in c]


def test_undeploy_goes_in_reverse_and_keeps_the_crd(tmp_path: Path, kubectl: Path) -> None:
    run = _make(tmp_path, kubectl, "undeploy")
    assert run.returncode == 0, run.stderr
    assert run.calls[0] == ("delete mutatingwebhookconfiguration,validatingwebhookconfiguration"
                            " -l app.kubernetes.io/name=cronjob-controller --ignore-not-found")
    assert run.calls[1].startswith("delete --ignore-not-found -k ")
    assert len(run.calls) == 2 and not any("crds" in c for c in run.calls)
    assert run.kustomization["resources"] == ["manifests/default"]
    assert "CRD kept: CronJobs and their Jobs stay" in run.stdout


def test_undeploy_with_uninstall_crd_deletes_it_last_and_says_what_goes(
    tmp_path: Path, kubectl: Path,
) -> None:
    run = _make(tmp_path, kubectl, "undeploy", UNINSTALL_CRD="1", OVERLAY="manifests/base")
    assert run.returncode == 0, run.stderr
    assert run.calls[-1] == f"delete --ignore-not-found -f {ROOT}/crds/"
    assert len(run.calls) == 3
    assert "every CronJob in every namespace" in run.stdout
    assert "garbage collection deletes the Jobs" in run.stdout


def _image(tmp_path: Path, docker: str) -> subprocess.CompletedProcess[str]:
    # BUILDAH: a machine with buildah would otherwise build for real when docker is missing.
    return subprocess.run(["make", "-s", "-C", str(ROOT), "image", f"DOCKER={docker}",
                           "IMG=registry.example/cj:3", f"BUILDAH={tmp_path / 'no-buildah'}"],
                          capture_output=True, text=True, timeout=60, check=False)


def _fake_docker(tmp_path: Path, engine: bool) -> Path:
    path = tmp_path / "docker"
    log = tmp_path / "docker.log"
    path.write_text("#!/usr/bin/env bash\n"
                    f"printf '%s\\n' \"$*\" >> {log}\n"
                    f"[[ \"$1\" != info ]] || exit {0 if engine else 1}\n")
    path.chmod(0o755)
    return path


def test_image_without_docker_says_so_in_one_line(tmp_path: Path) -> None:
    done = _image(tmp_path, str(tmp_path / "no-such-docker"))
    assert done.returncode != 0
    ours = [line for line in done.stderr.splitlines() if not line.startswith("make")]
    assert ours == ["image: docker not found: install Docker or buildah (or set DOCKER=...) "
                    "to build registry.example/cj:3"]


def test_image_without_an_engine_says_so_in_one_line(tmp_path: Path) -> None:
    done = _image(tmp_path, str(_fake_docker(tmp_path, engine=False)))
    assert done.returncode != 0
    ours = [line for line in done.stderr.splitlines() if not line.startswith("make")]
    assert len(ours) == 1 and "no engine answers" in ours[0]
    assert (tmp_path / "docker.log").read_text().splitlines() == ["info"]


def test_image_builds_the_repository_with_img(tmp_path: Path) -> None:
    done = _image(tmp_path, str(_fake_docker(tmp_path, engine=True)))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "docker.log").read_text().splitlines() == [
        "info", f"build -t registry.example/cj:3 {ROOT}"]


@pytest.mark.parametrize("target", ["deploy", "undeploy"])
def test_no_reachable_cluster_is_said_in_one_line_before_anything_is_sent(
        tmp_path: Path, kubectl: Path, target: str) -> None:
    run = _make(tmp_path, kubectl, target, unreachable=True)
    assert run.returncode != 0
    assert run.stderr.strip().splitlines()[0] == (  # then make's own "Error 1"
        f"{target}: no cluster reachable: set KUBECONFIG or CONTEXT")
    assert "localhost:8080" not in run.stderr
    assert run.checks == [REACHABLE] and run.calls == []


def test_deploy_checks_the_cluster_first_and_honours_context(tmp_path: Path,
                                                             kubectl: Path) -> None:
    run = _make(tmp_path, kubectl, "deploy", CONTEXT="kind-pyctrl")
    assert run.returncode == 0, run.stderr
    assert run.checks == [f"--context=kind-pyctrl {REACHABLE}"]
    assert all(c.startswith("--context=kind-pyctrl ") for c in run.calls) and run.calls
