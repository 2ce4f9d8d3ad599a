"""load_config: kubeconfig files and contexts, $KUBECONFIG, in-cluster detection."""

from __future__ import annotations

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
