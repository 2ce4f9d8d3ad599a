"""Unit tests for envtest's pods mode: the pod metadata kwok reads, and how it is switched on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pyctrl.testing.envtest import ControlPlane
from pyctrl.testing.envtest.binaries import BinariesNotFound, _from_dir, find_binaries
from pyctrl.testing.envtest.controlplane import DEFAULT_CONTROLLERS
from pyctrl.testing.envtest.pods import (
    COMPLETE_DELAY,
    COMPLETE_JITTER,
    COMPLETE_WEIGHT,
    FAIL_DELAY,
    FAIL_JITTER,
    FAIL_LABEL,
    FAKE_NODE_ANNOTATION,
    fake_node,
    fake_run,
)


def test_fake_run_sets_the_success_stage_delay_and_jitter_to_the_same_time() -> None:
    run = fake_run(2.5)
    assert run == {"labels": {},
                   "annotations": {COMPLETE_DELAY: "2500ms", COMPLETE_JITTER: "2500ms"}}


def test_fake_run_fail_selects_the_failure_stage_and_turns_the_success_stage_off() -> None:
    run = fake_run(1, fail=True)
    assert run["labels"] == {FAIL_LABEL: "true"}
    assert run["annotations"] == {FAIL_DELAY: "1000ms", FAIL_JITTER: "1000ms",
                                  COMPLETE_WEIGHT: "0"}


def test_fake_run_refuses_a_negative_time() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        fake_run(-1)


def test_fake_node_is_managed_by_kwok_and_untainted() -> None:
    node = fake_node("kwok-node-7")
    meta = node["metadata"]
    assert isinstance(meta, dict)
    assert meta["annotations"] == {FAKE_NODE_ANNOTATION[0]: FAKE_NODE_ANNOTATION[1]}
    assert "spec" not in node  # no taints: any pod may land there


def test_pods_mode_adds_the_job_controller_and_the_controller_manager() -> None:
    plane = ControlPlane(pods=True, kubeconfig="")
    assert plane.controller_manager
    assert plane.controllers == [*DEFAULT_CONTROLLERS, "job"]
    default = ControlPlane(kubeconfig="")
    assert not default.pods and not default.controller_manager
    assert default.controllers == list(DEFAULT_CONTROLLERS)
    with pytest.raises(ValueError, match="fake_nodes"):
        ControlPlane(pods=True, fake_nodes=0, kubeconfig="")


def test_binaries_find_kube_scheduler_kwok_and_its_stages(tmp_path: Path) -> None:
    for name in ("etcd", "kube-apiserver", "kube-scheduler", "kwok"):
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)
    found = _from_dir(tmp_path)
    assert (found.kube_scheduler, found.kwok) == (tmp_path / "kube-scheduler", tmp_path / "kwok")
    assert found.kwok_stages is None and found.kube_controller_manager is None
    (tmp_path / "kwok-stages").mkdir()
    assert _from_dir(tmp_path).kwok_stages == tmp_path / "kwok-stages"


def test_the_stages_build_sh_installed_read_the_metadata_fake_run_writes() -> None:
    try:
        stages = find_binaries(build=False).kwok_stages
    except BinariesNotFound:
        stages = None
    if stages is None or os.environ.get("KUBEBUILDER_ASSETS"):
        pytest.skip("kwok's Stages are not built here (hack/controlplane/build.sh)")
    text = "\n".join(p.read_text() for p in sorted(stages.glob("*.yaml")))
    for key in (COMPLETE_DELAY, COMPLETE_JITTER, COMPLETE_WEIGHT, FAIL_DELAY, FAIL_JITTER,
                FAIL_LABEL):
        assert key in text, key
