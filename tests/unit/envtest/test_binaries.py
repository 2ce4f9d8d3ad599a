"""pyctrl.testing.envtest.binaries: the one lookup of the control-plane binaries and the
installer's lock, on a temporary cache with a fake builder (no Go, no real binaries).

The lock tests run two threads (or this process and ``flock(1)``, which is what
``gomod/build.sh`` uses): the second caller must say once that it waits, wait, and then use
the first one's result without building. They synchronise on events, never on time."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from pyctrl.testing.envtest import binaries
from pyctrl.testing.envtest.binaries import (
    BUILT,
    GOMOD,
    BinariesNotFound,
    cache_root,
    find_binaries,
    install,
    install_dir,
    installed,
    pinned_versions,
)


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache root, and none of the variables that would bypass it."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("KUBEBUILDER_ASSETS", raising=False)
    monkeypatch.delenv("PYCTRL_CONTROLPLANE_DIR", raising=False)
    return cache_root()


def fake_build(directory: Path, names: tuple[str, ...] = BUILT) -> None:
    """What gomod/build.sh leaves: executables, kwok's Stages and kwok.version."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        (directory / name).write_text("#!/bin/sh\n")
        (directory / name).chmod(0o755)
    (directory / "kwok-stages").mkdir(exist_ok=True)
    (directory / "kwok.version").write_text(pinned_versions().kwok + "\n")


def never(directory: Path) -> None:
    raise AssertionError(f"built {directory}")


def test_the_key_and_versions_are_build_sh_s() -> None:
    env = {k: v for k, v in os.environ.items() if k != "KUBEBUILDER_ASSETS"}
    script = str(GOMOD / "build.sh")
    out = subprocess.run(["bash", script, "--dir"], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    assert Path(out) == install_dir()
    assert install_dir().parent == cache_root()
    versions = subprocess.run(["bash", script, "--versions"], env=env, capture_output=True,
                              text=True, check=True).stdout.split()
    v = pinned_versions()
    assert versions == [v.kubernetes, v.etcd, v.kwok]
    assert all(x.startswith("v") for x in versions)


def test_the_lookup_order(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(BinariesNotFound, match=r"`pyctrl envtest install`") as err:
        find_binaries(build=False)
    assert "\n" not in str(err.value)
    older = cache / "k8s-v1.0.0_etcd-v3.0.0"
    fake_build(older, ("etcd", "kube-apiserver"))
    assert find_binaries(build=False).directory == older  # another version, rather than none
    fake_build(install_dir())
    found = find_binaries(build=False)
    assert found.directory == install_dir() and found.kwok == install_dir() / "kwok"
    assert found.kwok_stages == install_dir() / "kwok-stages"
    assets = tmp_path / "assets"
    fake_build(assets, ("etcd", "kube-apiserver"))
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(assets))
    found = find_binaries(build=False)
    assert found.directory == assets and found.kwok is None
    assert install(never) == assets
    (assets / "etcd").unlink()
    with pytest.raises(BinariesNotFound, match=r"KUBEBUILDER_ASSETS=.* does not hold"):
        find_binaries(build=False)


def test_install_is_idempotent_and_checks_what_it_built() -> None:
    built: list[Path] = []

    def builder(directory: Path) -> None:
        built.append(directory)
        fake_build(directory)

    assert install(builder) == install_dir() and built == [install_dir()]
    assert installed(install_dir())
    assert install(never) == install_dir()  # at once, no build
    (install_dir() / "kwok.version").write_text("v0.0.1\n")  # kwok bumped: build again
    assert not installed(install_dir())
    assert install(builder) == install_dir() and len(built) == 2
    (install_dir() / "kube-scheduler").unlink()
    with pytest.raises(BinariesNotFound, match=r"incomplete.*kube-scheduler"):
        install(lambda d: None)


def test_go_missing_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(BinariesNotFound, match="needs Go on PATH") as err:
        install()
    assert "\n" not in str(err.value)


def _first_build_blocked() -> tuple[threading.Thread, threading.Event]:
    """A thread installing with a builder that holds the lock until ``release`` is set."""
    building, release = threading.Event(), threading.Event()

    def slow(directory: Path) -> None:
        building.set()
        assert release.wait(30)
        fake_build(directory)

    first = threading.Thread(target=install, args=(slow,), kwargs={"say": lambda m: None})
    first.start()
    assert building.wait(30)
    return first, release


def _second(call: Callable[[Callable[[str], None]], object]) -> tuple[
        threading.Thread, list[object], list[str], threading.Event]:
    said: list[str] = []
    waiting = threading.Event()
    result: list[object] = []

    def say(message: str) -> None:
        said.append(message)
        waiting.set()

    second = threading.Thread(target=lambda: result.append(call(say)))
    second.start()
    return second, result, said, waiting


def test_a_second_install_waits_for_the_build_in_progress_and_does_not_build() -> None:
    first, release = _first_build_blocked()
    second, result, said, waiting = _second(lambda say: install(never, say=say))
    assert waiting.wait(30)  # it said so before blocking on the lock
    assert second.is_alive() and not result
    release.set()
    first.join(30)
    second.join(30)
    assert result == [install_dir()]
    assert len(said) == 1 and "build is in progress" in said[0] and ".build.lock" in said[0]


def test_the_lookup_waits_for_the_build_in_progress() -> None:
    first, release = _first_build_blocked()
    second, result, said, waiting = _second(lambda say: find_binaries(build=False, say=say))
    assert waiting.wait(30)
    assert not result
    release.set()
    first.join(30)
    second.join(30)
    assert len(result) == 1 and isinstance(result[0], binaries.Binaries)
    assert result[0].directory == install_dir() and len(said) == 1


@pytest.mark.skipif(shutil.which("flock") is None, reason="no flock(1)")
def test_build_sh_s_flock_is_the_same_lock() -> None:
    install_dir().mkdir(parents=True)
    lock = install_dir() / ".build.lock"
    holder = subprocess.Popen(["flock", str(lock), "-c", "echo locked; read line"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdin is not None
    try:
        assert holder.stdout.readline() == "locked\n"
        fake_build(install_dir())  # what that "build" makes before it lets go
        (install_dir() / "kwok.version").unlink()
        second, result, said, waiting = _second(lambda say: install(never, say=say))
        assert waiting.wait(30)
        assert not result
        (install_dir() / "kwok.version").write_text(pinned_versions().kwok)
        holder.stdin.write("done\n")
        holder.stdin.flush()
        second.join(30)
        assert result == [install_dir()] and len(said) == 1
    finally:
        with holder:  # closes its pipes (unclosed, a ResourceWarning under -W error)
            holder.kill()


def test_in_a_checkout_the_lookup_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[Path] = []

    def go_build(directory: Path) -> None:
        built.append(directory)
        fake_build(directory)

    monkeypatch.setattr(binaries, "go_build", go_build)
    assert binaries._checkout()  # this test runs from the source tree
    with pytest.raises(BinariesNotFound):
        find_binaries(build=False)
    assert find_binaries().directory == install_dir() and built == [install_dir()]
