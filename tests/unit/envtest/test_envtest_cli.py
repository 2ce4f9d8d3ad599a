"""``python -m pyctrl envtest install|list|path`` and ``pyctrl run``'s errors before a first
run, as a user meets them: a subprocess with an empty cache (``HOME`` and
``XDG_CACHE_HOME`` in a temporary directory), no ``KUBEBUILDER_ASSETS`` and no Go on PATH.
Each mistake is one line on stderr, exit status 2, never a traceback; nothing is built."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pyctrl.testing.envtest.binaries import BUILT, pinned_versions

ROOT = Path(__file__).resolve().parents[3]
SETUP = "examples.sample_controller.controller:setup"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def user_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("KUBEBUILDER_ASSETS", "PYCTRL_CONTROLPLANE_DIR", "KUBECONFIG")}
    # No Go: a regression that starts a build fails fast instead of compiling for minutes.
    path = [d for d in env.get("PATH", "").split(os.pathsep) if not (Path(d) / "go").exists()]
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), PATH=os.pathsep.join(path))
    return env


def pyctrl(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyctrl", *argv], cwd=ROOT,
                          env=user_env(home), capture_output=True, text=True, timeout=120,
                          check=False)


def one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def pinned_dir(home: Path) -> Path:
    v = pinned_versions()
    return home / ".cache" / "pyctrl" / "controlplane" / f"k8s-{v.kubernetes}_etcd-{v.etcd}"


def installed(home: Path) -> Path:
    """A fake complete install of the pinned versions in ``home``'s cache."""
    v = pinned_versions()
    directory = pinned_dir(home)
    directory.mkdir(parents=True)
    for name in BUILT:
        (directory / name).write_text("#!/bin/sh\n")
        (directory / name).chmod(0o755)
    (directory / "kwok-stages").mkdir()
    (directory / "kwok.version").write_text(v.kwok + "\n")
    return directory


def test_run_without_binaries_or_context_is_one_line(home: Path) -> None:
    one_line_error(pyctrl(home, "run", SETUP), "pyctrl envtest install", "--context", "Go")
    assert not (home / ".cache" / "pyctrl" / "controlplane").exists()  # nothing was built


@pytest.mark.skipif(shutil.which("flock") is None, reason="no flock(1)")
def test_run_waits_for_a_build_in_progress(home: Path) -> None:
    """A build holding the cache's lock (flock(1), as gomod/build.sh takes it) is waited for,
    said once; it ends without binaries here, so then comes the one-line error."""
    pinned_dir(home).mkdir(parents=True)
    holder = subprocess.Popen(["flock", str(pinned_dir(home) / ".build.lock"), "-c",
                               "echo locked; read line"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    run = None
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline() == "locked\n"
        run = subprocess.Popen([sys.executable, "-m", "pyctrl", "run", SETUP], cwd=ROOT,
                               env=user_env(home), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        assert run.stderr is not None
        said = run.stderr.readline()
        assert "build is in progress" in said and "waiting" in said, said
        assert run.poll() is None  # still waiting
        holder.stdin.write("done\n")
        holder.stdin.flush()
        out, err = run.communicate(timeout=120)
        one_line_error(subprocess.CompletedProcess(run.args, run.returncode, out, err),
                       "pyctrl envtest install", "--context")
    finally:
        for proc in (holder, run):
            if proc is not None:
                with proc:  # closes its pipes (unclosed, a ResourceWarning under -W error)
                    proc.kill()


@pytest.mark.parametrize("kubeconfig, words", [
    (None, ["no kubeconfig"]),
    ("contexts: [{name: a, context: {cluster: c, user: u}}]\n"
     "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\nusers: [{name: u}]\n",
     ["no context 'nope'", "it has: a"]),
    ("garbage: [\n", ["not", "line 2"]),
])
def test_run_with_a_bad_context_is_one_line(home: Path, kubeconfig: str | None,
                                             words: list[str]) -> None:
    if kubeconfig is not None:
        (home / ".kube").mkdir(parents=True)
        (home / ".kube" / "config").write_text(kubeconfig)
    one_line_error(pyctrl(home, "run", SETUP, "--context", "nope"), *words)


def test_run_against_an_unreachable_cluster_is_one_line(home: Path) -> None:
    (home / ".kube").mkdir(parents=True)
    (home / ".kube" / "config").write_text(
        "contexts: [{name: down, context: {cluster: c, user: u}}]\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n")
    one_line_error(pyctrl(home, "run", SETUP, "--context", "down"), "cannot reach",
                   "--context", "pyctrl envtest install")


def test_path_and_list_without_binaries(home: Path) -> None:
    one_line_error(pyctrl(home, "envtest", "path"), "pyctrl envtest install")
    listed = pyctrl(home, "envtest", "list")
    assert listed.returncode == 0 and "nothing installed" in listed.stdout
    assert pinned_versions().kubernetes in listed.stdout


def test_install_without_go_says_so(home: Path) -> None:
    done = pyctrl(home, "envtest", "install")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith("error: ")
    assert "needs Go on PATH" in done.stderr


def test_with_the_cache_installed(home: Path) -> None:
    directory = installed(home)
    for action in ("install", "path"):  # install returns at once: no Go here to build with
        done = pyctrl(home, "envtest", action)
        assert (done.returncode, done.stdout, done.stderr) == (0, f"{directory}\n", "")
    listed = pyctrl(home, "envtest", "list").stdout
    v = pinned_versions()
    assert f"k8s {v.kubernetes}  etcd {v.etcd}  kwok {v.kwok}  {directory}" in listed
    assert "(complete; pinned by this pyctrl)" in listed
    (directory / "kwok").unlink()
    assert "(incomplete: no kwok; pinned by this pyctrl)" in pyctrl(home, "envtest", "list").stdout
    one_line_error(pyctrl(home, "run", SETUP, "--pods"), "--pods needs", "kwok",
                   "pyctrl envtest install")
