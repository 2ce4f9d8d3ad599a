"""The sandboxed run (tests/integration/test_container_run.py) stays the image's run.

That test proves what the image would do without a Docker engine, so it is only worth what
its likeness is: these checks fail when the Dockerfile or the Deployment changes and the
sandbox does not (or the other way round): the same lock file and ``--no-deps`` build steps,
the same sources copied, the same uid/gid as the Deployment's securityContext, the same
entrypoint and ENV, the Deployment's own args (only bind addresses moved) and env, and the
mounts the args point at.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest
from kubernetes.config import incluster_config

from cronjob_controller.__main__ import build_parser
from tests.integration import test_container_run as sandbox

ROOT = Path(__file__).resolve().parents[3]


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, rest) of the Dockerfile, continuation lines joined, comments dropped."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), " ".join(rest.split())))
    return out


def _stages() -> list[list[tuple[str, str]]]:
    stages: list[list[tuple[str, str]]] = []
    for word, rest in _instructions():
        if word == "FROM":
            stages.append([])
        if stages:
            stages[-1].append((word, rest))
    return stages


def _env(rest: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in shlex.split(rest))


@pytest.fixture(scope="module")
def deployment() -> dict[str, Any]:
    return sandbox.deployment()


def test_build_steps_are_the_dockerfiles_with_the_same_lock_and_no_deps() -> None:
    build = _stages()[0]
    steps = [tuple(shlex.split(cmd)) for word, rest in build if word == "RUN"
             for cmd in rest.split("&&")]
    assert tuple(steps) == sandbox.BUILD_STEPS
    assert all("--no-deps" in s for s in steps if s[1:2] == ("install",))
    # The cached layer is exactly what the Dockerfile runs before copying the sources.
    copies = [rest.split() for word, rest in build if word == "COPY"]
    assert copies[0] == [sandbox.LOCK_FILE, sandbox.LOCK_FILE]
    runs_before_sources = [rest for word, rest in build[:build.index(("COPY", " ".join(
        copies[1])))] if word == "RUN"]
    assert [tuple(shlex.split(c)) for r in runs_before_sources for c in r.split("&&")] == list(
        sandbox.BUILD_STEPS[:sandbox.DEPS_LAYER])
    copied = [src for parts in copies[1:] for src in parts[:-1]]
    assert tuple(copied) == sandbox.IMAGE_SOURCES
    assert (ROOT / sandbox.LOCK_FILE).is_file()


def test_runtime_user_entrypoint_and_env_match_the_image_and_the_deployment(
    deployment: dict[str, Any],
) -> None:
    runtime = _stages()[-1]
    user = [rest for word, rest in runtime if word == "USER"][-1]
    assert user == f"{sandbox.IMAGE_UID}:{sandbox.IMAGE_GID}"
    pod_sc = deployment["spec"]["template"]["spec"]["securityContext"]
    assert (pod_sc["runAsUser"], pod_sc["runAsGroup"]) == (sandbox.IMAGE_UID, sandbox.IMAGE_GID)
    entrypoint = [rest for word, rest in runtime if word == "ENTRYPOINT"][-1]
    assert tuple(shlex.split(entrypoint.strip("[]").replace(",", " "))) == sandbox.ENTRYPOINT
    env: dict[str, str] = {}
    for word, rest in runtime:
        if word == "ENV":
            env.update(_env(rest))
    env["PATH"] = env["PATH"].replace("$PATH", sandbox.BASE_PATH)
    assert env == sandbox.IMAGE_ENV
    copied = [rest.split() for word, rest in runtime if word == "COPY"]
    assert ["--from=build", sandbox.VENV, sandbox.VENV] in copied
    # The container drops every capability and forbids escalation, as bwrap's
    # --cap-drop ALL and no_new_privs do; its root filesystem is read-only.
    sc = sandbox.container(deployment)["securityContext"]
    assert sc["capabilities"]["drop"] == ["ALL"] and sc["allowPrivilegeEscalation"] is False
    assert sc["readOnlyRootFilesystem"] is True


def test_sandbox_runs_the_deployments_args_moving_only_bind_addresses(
    deployment: dict[str, Any],
) -> None:
    args = sandbox.container(deployment)["args"]
    ports = iter(range(20000, 20100))
    moved, bound = sandbox.sandbox_args(args, lambda flag: next(ports))
    assert len(moved) == len(args)
    for before, after in zip(args, moved, strict=True):
        flag = before.split("=", 1)[0]
        if flag in bound:
            assert after == f"{flag}=127.0.0.1:{bound[flag]}"
        else:
            assert after == before
    assert {"--health-probe-bind-address", "--metrics-bind-address",
            "--webhook-bind-address"} <= bound.keys()
    original, sandboxed = vars(build_parser().parse_args(args)), vars(
        build_parser().parse_args(moved))
    changed = {k for k in original if original[k] != sandboxed[k]}
    assert changed == {f[2:].replace("-", "_") for f in bound}


def test_sandbox_args_handle_both_flag_forms_and_keep_disabled_servers_off() -> None:
    moved, bound = sandbox.sandbox_args(
        ["--metrics-bind-address", ":8443", "--webhook-bind-address=0", "--workers=2"],
        lambda flag: 1234)
    assert moved == ["--metrics-bind-address=127.0.0.1:1234", "--webhook-bind-address=0",
                     "--workers=2"]
    assert bound == {"--metrics-bind-address": 1234}


def test_sandbox_mounts_are_where_the_deployment_and_in_cluster_config_expect_them(
    deployment: dict[str, Any],
) -> None:
    ctr = sandbox.container(deployment)
    args = build_parser().parse_args(ctr["args"])
    mounts = {m["mountPath"]: m for m in ctr["volumeMounts"]}
    # The webhook certificate directory is a read-only mount; /tmp the only writable one.
    assert mounts[args.webhook_cert_dir].get("readOnly") is True
    writable = {p for p, m in mounts.items() if not m.get("readOnly")}
    assert writable == {"/tmp"}
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]["name"]]
    # The service account files are where the kubernetes package's in-cluster loader reads.
    assert f"{sandbox.SA_DIR}/token" == incluster_config.SERVICE_TOKEN_FILENAME
    assert f"{sandbox.SA_DIR}/ca.crt" == incluster_config.SERVICE_CERT_FILENAME
    assert deployment["spec"]["template"]["spec"].get("automountServiceAccountToken") is True
    # The kubelet's env for this container is what the sandbox can provide.
    env = sandbox.pod_env(deployment)
    assert env.get("POD_NAMESPACE") == deployment["metadata"]["namespace"]
    # SIGTERM: the controller's graceful timeout fits in the pod's termination grace period.
    grace = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert args.graceful_shutdown_timeout < grace
