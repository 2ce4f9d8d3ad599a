"""load_config: kubeconfig files and contexts, $KUBECONFIG, in-cluster detection."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from pyctrl.kube.client import RESTClient
from pyctrl.kube.config import ConfigError, KubeConfig, in_cluster, load_config


def write_kubeconfig(path: Path) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "one",
        "clusters": [
            {"name": "c1", "cluster": {"server": "http://127.0.0.1:1111/"}},
            {"name": "c2", "cluster": {"server": "https://10.0.0.2:6443",
                                       "insecure-skip-tls-verify": True}},
        ],
        "users": [{"name": "u1", "user": {"token": "tok-1"}},
                  {"name": "u2", "user": {"username": "admin", "password": "pw"}}],
        "contexts": [{"name": "one", "context": {"cluster": "c1", "user": "u1"}},
                     {"name": "two", "context": {"cluster": "c2", "user": "u2"}}],
    }))
    return path


def test_current_context(tmp_path: Path) -> None:
    cfg = load_config(str(write_kubeconfig(tmp_path / "kc")))
    assert cfg.host == "http://127.0.0.1:1111" and cfg.netloc == "127.0.0.1:1111"
    assert cfg.authorization() == "Bearer tok-1"
    assert cfg.context == "one" and cfg.source == str(tmp_path / "kc")


def test_named_context_with_basic_auth(tmp_path: Path) -> None:
    cfg = load_config(str(write_kubeconfig(tmp_path / "kc")), context="two")
    assert cfg.host == "https://10.0.0.2:6443" and cfg.context == "two"
    assert cfg.configuration.verify_ssl is False
    assert (cfg.authorization() or "").startswith("Basic ")


def test_kubeconfig_env_and_from_kubeconfig(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(tmp_path / "kc")))
    assert load_config().host == "http://127.0.0.1:1111"
    with RESTClient.from_kubeconfig(qps=0) as client:
        assert client.config.context == "one"


def test_missing_config_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError):
        load_config(str(tmp_path / "absent"))
    monkeypatch.setenv("KUBECONFIG", "")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ConfigError):
        load_config()
    with pytest.raises(ConfigError):
        load_config(str(write_kubeconfig(tmp_path / "kc")), context="nope")


def test_in_cluster_detection(tmp_path: Path) -> None:
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    assert not in_cluster(env, tmp_path)
    (tmp_path / "token").write_text("t")
    assert in_cluster(env, tmp_path)
    assert not in_cluster({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, tmp_path)


def test_from_url_token() -> None:
    assert KubeConfig.from_url("http://x:1/", token="abc").authorization() == "Bearer abc"
    assert KubeConfig.from_url("http://x:1").authorization() is None


def test_in_cluster_config_reads_service_account(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "token").write_text("sa-token")
    (tmp_path / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    monkeypatch.setattr("pyctrl.kube.config._SA_DIR", tmp_path)
    monkeypatch.setenv("KUBECONFIG", "")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    cfg = load_config()
    assert cfg.source == "in-cluster" and cfg.host == "https://10.0.0.1:443"
    assert cfg.authorization() == "bearer sa-token"
    assert cfg.configuration.ssl_ca_cert == str(tmp_path / "ca.crt")


def _yaml(path: Path, doc: dict[str, object]) -> Path:
    path.write_text(yaml.safe_dump(doc))
    return path


def test_common_contexts_load_without_the_kubernetes_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import base64
    import sys

    from pyctrl.kube._kubeconfig import ConnectionSettings

    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "ca.crt").write_text("ca")
    (tmp_path / "tok").write_text("file-token\n")
    first = _yaml(tmp_path / "a", {
        "current-context": "cert",
        "clusters": [{"name": "c", "cluster": {
            "server": "https://10.0.0.9:6443/", "certificate-authority": "certs/ca.crt",
            "tls-server-name": "api.example"}}],
        "users": [{"name": "cert", "user": {
            "client-certificate-data": base64.b64encode(b"CERT").decode(),
            "client-key-data": base64.b64encode(b"KEY").decode()}}],
        "contexts": [{"name": "cert", "context": {"cluster": "c", "user": "cert"}}]})
    second = _yaml(tmp_path / "b", {
        "current-context": "ignored",
        "clusters": [{"name": "c", "cluster": {"server": "https://shadowed"}},
                     {"name": "d", "cluster": {"server": "https://d:1",
                                               "certificate-authority-data":
                                               base64.b64encode(b"PEM").decode()}}],
        "users": [{"name": "tf", "user": {"tokenFile": "tok"}}],
        "contexts": [{"name": "tf", "context": {"cluster": "d", "user": "tf"}}]})
    monkeypatch.delitem(sys.modules, "kubernetes", raising=False)
    monkeypatch.setenv("KUBECONFIG", f"{first}{os.pathsep}{second}")
    cfg = load_config()
    settings = cfg.configuration
    assert isinstance(settings, ConnectionSettings) and cfg.context == "cert"
    assert (cfg.host, settings.ssl_ca_cert, settings.tls_server_name) == (
        "https://10.0.0.9:6443", str(tmp_path / "certs" / "ca.crt"), "api.example")
    assert settings.cert_file and Path(settings.cert_file).read_bytes() == b"CERT"
    assert settings.key_file and Path(settings.key_file).read_bytes() == b"KEY"
    assert oct(Path(settings.key_file).stat().st_mode & 0o777) == "0o600"
    other = load_config(context="tf")
    assert other.host == "https://d:1" and other.configuration.ca_cert_data == "PEM"
    assert other.authorization() == "Bearer file-token"  # relative to the file naming it
    assert "kubernetes" not in sys.modules


def test_other_users_go_through_the_kubernetes_loader(tmp_path: Path) -> None:
    from kubernetes.client import Configuration

    path = _yaml(tmp_path / "kc", {
        "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": {"token": "t", "as": "someone"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}]})
    cfg = load_config(str(path))
    assert isinstance(cfg.configuration, Configuration)
    assert (cfg.host, cfg.authorization(), cfg.context) == ("http://127.0.0.1:9", "Bearer t", "x")


def test_token_files_are_reread_once_a_minute(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from pyctrl.kube import _kubeconfig
    from pyctrl.testing import FakeClock

    clock = FakeClock()
    monkeypatch.setattr(_kubeconfig, "_CLOCK", clock)
    (tmp_path / "token").write_text("one")
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    settings = _kubeconfig.in_cluster_settings(env, tmp_path)
    assert settings.host == "https://[fd00::1]:443"
    (tmp_path / "token").write_text("two")
    assert settings.authorization() == "bearer one"
    clock.step(60)
    assert settings.authorization() == "bearer two"
