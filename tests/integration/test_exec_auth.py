"""An exec credential plugin authenticates pyctrl to a real kube-apiserver (envtest started
with a static token file): the plugin (a script written here) prints the token, pyctrl runs
it natively, without the kubernetes package, and the apiserver accepts the token."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from pyctrl.errors import Unauthorized
from pyctrl.kube.client import RESTClient
from pyctrl.kube.config import load_config
from pyctrl.kube.resource import NAMESPACES
from pyctrl.testing.envtest import ControlPlane
from tests.unit.kube.test_exec_plugin import Plugin

pytestmark = pytest.mark.integration

TOKEN = "exec-plugin-token-0123456789"


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    if ControlPlane().external:
        pytest.skip("needs its own kube-apiserver (a static token file)")
    tokens = tmp_path_factory.mktemp("auth") / "tokens.csv"
    tokens.write_text(f'{TOKEN},exec-user,exec-uid,"system:masters"\n')
    with ControlPlane(apiserver_args=[f"--token-auth-file={tokens}"]) as cp:
        yield cp


def _kubeconfig(tmp_path: Path, cp: ControlPlane, plugin: Plugin) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "exec",
        "clusters": [{"name": "envtest", "cluster": {
            "server": cp.server, "certificate-authority": str(cp.pki.ca_cert)}}],
        "users": [{"name": "exec-user", "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin.path),
            "interactiveMode": "Never", "provideClusterInfo": True}}}],
        "contexts": [{"name": "exec", "context": {"cluster": "envtest",
                                                  "user": "exec-user"}}]}))
    return str(path)


def test_exec_plugin_token_authenticates_to_the_apiserver(
        plane: ControlPlane, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "kubernetes", raising=False)
    plugin = Plugin(tmp_path / "bin")
    plugin.answer({"token": TOKEN})
    client = RESTClient(load_config(_kubeconfig(tmp_path, plane, plugin)))
    try:
        assert client.get(NAMESPACES, "default")["metadata"]["name"] == "default"
        assert client.get(NAMESPACES, "kube-system")["metadata"]["name"] == "kube-system"
    finally:
        client.close()
    (run,) = plugin.runs()  # once, at load: the credential has no expiry
    assert run["info"]["spec"]["cluster"]["server"] == plane.server
    assert "kubernetes" not in sys.modules


def test_a_token_the_apiserver_does_not_know_is_refused(plane: ControlPlane,
                                                        tmp_path: Path) -> None:
    plugin = Plugin(tmp_path / "bin")
    plugin.answer({"token": "not-" + TOKEN})
    client = RESTClient(load_config(_kubeconfig(tmp_path, plane, plugin)), max_retries=0)
    try:
        with pytest.raises(Unauthorized):
            client.get(NAMESPACES, "default")
    finally:
        client.close()


def test_a_refused_credential_is_renewed_once_and_the_request_retried(
        plane: ControlPlane, tmp_path: Path) -> None:
    """client-go's exec authenticator: a 401 drops the cached credential and the plugin runs
    again; the request succeeds with the new token. A second 401 is the caller's."""
    plugin = Plugin(tmp_path / "bin")
    plugin.answer({"token": "stale-" + TOKEN})  # cached at load: no expiry
    client = RESTClient(load_config(_kubeconfig(tmp_path, plane, plugin)), max_retries=0)
    try:
        plugin.answer({"token": TOKEN})
        assert client.get(NAMESPACES, "default")["metadata"]["name"] == "default"
        assert len(plugin.runs()) == 2
        assert client.get(NAMESPACES, "default")["metadata"]["name"] == "default"
        assert len(plugin.runs()) == 2  # the renewed token is cached again
        plugin.answer({"token": "revoked-" + TOKEN})
        client.config.renew_credentials()
        with pytest.raises(Unauthorized):
            client.get(NAMESPACES, "default")
        assert len(plugin.runs()) == 4  # renewed once on the 401, then the 401 is raised
    finally:
        client.close()
