"""Exec credential plugins run natively: a real plugin script (written here) is run by
load_config / KubeConfig.authorization, without the kubernetes package."""

from __future__ import annotations

import json
import stat
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives import serialization

from pyctrl.kube import _kubeconfig
from pyctrl.kube._kubeconfig import ConnectionSettings
from pyctrl.kube.config import ConfigError, load_config
from pyctrl.serving.certs import issue_cert, new_ca
from pyctrl.testing import FakeClock

V1 = "client.authentication.k8s.io/v1"
V1BETA1 = "client.authentication.k8s.io/v1beta1"
START = datetime(2026, 1, 1, tzinfo=UTC)

# The plugin: records each run (argv, env, KUBERNETES_EXEC_INFO, whether stdin is readable)
# in runs.jsonl beside it and prints the ExecCredential status found in status.json.
PLUGIN = """\
import json, os, sys
from pathlib import Path
here = Path(__file__).parent
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
try:
    stdin_data = sys.stdin.read()
except Exception as exc:  # no stdin at all
    stdin_data = repr(exc)
with open(here / "runs.jsonl", "a") as f:
    f.write(json.dumps({"argv": sys.argv[1:], "info": info, "stdin": stdin_data,
                        "greeting": os.environ.get("GREETING")}) + "\\n")
answer = json.loads((here / "answer.json").read_text())
if answer.get("exit"):
    sys.exit(answer["exit"])
print(json.dumps({"apiVersion": answer.get("apiVersion", info["apiVersion"]),
                  "kind": "ExecCredential", "status": answer["status"]}))
"""


class Plugin:
    """The plugin script in a directory, its answers and the runs it recorded."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / "plugin.py"
        self.path.write_text(f"#!{sys.executable}\n{PLUGIN}")
        self.path.chmod(self.path.stat().st_mode | stat.S_IXUSR)
        self.answer({"token": "tok-1"})

    def answer(self, status: dict[str, Any], **extra: Any) -> None:
        (self.dir / "answer.json").write_text(json.dumps({"status": status, **extra}))

    def runs(self) -> list[dict[str, Any]]:
        log = self.dir / "runs.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture
def plugin(tmp_path: Path) -> Plugin:
    return Plugin(tmp_path / "bin")


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock(START)
    monkeypatch.setattr(_kubeconfig, "_CLOCK", fake)
    return fake


def kubeconfig(tmp_path: Path, exec_: dict[str, Any], cluster: dict[str, Any] | None = None,
               ) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": cluster or {"server": "https://10.0.0.9:6443"}}],
        "users": [{"name": "u", "user": {"exec": exec_}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}]}))
    return str(path)


def exec_stanza(plugin: Plugin, **more: Any) -> dict[str, Any]:
    return {"apiVersion": V1, "command": str(plugin.path), "interactiveMode": "Never", **more}


def test_token_plugin_gets_args_env_and_exec_info_and_is_cached(
        tmp_path: Path, plugin: Plugin, clock: FakeClock,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "kubernetes", raising=False)
    cfg = load_config(kubeconfig(tmp_path, exec_stanza(
        plugin, args=["get-token", "--cluster", "prod"],
        env=[{"name": "GREETING", "value": "hello"}])))
    assert isinstance(cfg.configuration, ConnectionSettings)
    assert cfg.authorization() == "Bearer tok-1"
    assert cfg.authorization() == "Bearer tok-1"
    (run,) = plugin.runs()  # run once at load; no expiry: cached for good
    assert run["argv"] == ["get-token", "--cluster", "prod"]
    assert run["greeting"] == "hello"
    assert run["stdin"] == ""  # Never: stdin is not handed over
    assert run["info"] == {"apiVersion": V1, "kind": "ExecCredential",
                           "spec": {"interactive": False}}
    assert "kubernetes" not in sys.modules


def test_credential_is_cached_until_its_expiration(tmp_path: Path, plugin: Plugin,
                                                   clock: FakeClock) -> None:
    expiry = (START + timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    plugin.answer({"token": "tok-1", "expirationTimestamp": expiry})
    cfg = load_config(kubeconfig(tmp_path, exec_stanza(plugin)))
    plugin.answer({"token": "tok-2"})
    clock.step(599)
    assert cfg.authorization() == "Bearer tok-1" and len(plugin.runs()) == 1
    clock.step(1)
    assert cfg.authorization() == "Bearer tok-2" and len(plugin.runs()) == 2
    assert cfg.authorization() == "Bearer tok-2" and len(plugin.runs()) == 2


def test_provide_cluster_info_hands_the_cluster_over(tmp_path: Path, plugin: Plugin,
                                                    clock: FakeClock) -> None:
    (tmp_path / "ca.crt").write_bytes(b"CA PEM")
    cluster = {"server": "https://10.0.0.9:6443", "certificate-authority": "ca.crt",
               "tls-server-name": "api.example", "proxy-url": "http://proxy:3128",
               "extensions": [{"name": "client.authentication.k8s.io/exec",
                               "extension": {"audience": "prod"}}]}
    load_config(kubeconfig(tmp_path, exec_stanza(plugin, provideClusterInfo=True), cluster))
    (run,) = plugin.runs()
    assert run["info"]["spec"]["cluster"] == {
        "server": "https://10.0.0.9:6443", "certificate-authority-data": "Q0EgUEVN",
        "tls-server-name": "api.example", "proxy-url": "http://proxy:3128",
        "config": {"audience": "prod"}}


def test_v1beta1_defaults_to_if_available(tmp_path: Path, plugin: Plugin,
                                          clock: FakeClock) -> None:
    stanza = {"apiVersion": V1BETA1, "command": str(plugin.path)}
    cfg = load_config(kubeconfig(tmp_path, stanza))
    assert cfg.authorization() == "Bearer tok-1"
    assert plugin.runs()[0]["info"]["spec"] == {"interactive": False}  # stdin: no terminal


def test_interactive_modes_without_a_terminal(tmp_path: Path, plugin: Plugin,
                                              clock: FakeClock) -> None:
    with pytest.raises(ConfigError, match="interactiveMode is required"):
        load_config(kubeconfig(tmp_path, {"apiVersion": V1, "command": str(plugin.path)}))
    with pytest.raises(ConfigError, match="interactiveMode is Always but stdin is not a "
                                          "terminal"):
        load_config(kubeconfig(tmp_path, exec_stanza(plugin, interactiveMode="Always")))
    assert plugin.runs() == []
    cfg = load_config(kubeconfig(tmp_path, exec_stanza(plugin, interactiveMode="IfAvailable")))
    assert cfg.authorization() == "Bearer tok-1"


def test_if_available_with_a_terminal_says_interactive(tmp_path: Path, plugin: Plugin,
                                                       clock: FakeClock) -> None:
    from pyctrl.kube._exec import ExecPlugin

    stanza = exec_stanza(plugin, interactiveMode="IfAvailable")
    exec_plugin = ExecPlugin.from_kubeconfig(stanza, {"server": "https://a"}, tmp_path, clock)
    exec_plugin.stdin_is_tty = lambda: True
    assert exec_plugin.credential().token == "tok-1"
    assert plugin.runs()[0]["info"]["spec"] == {"interactive": True}


def _pem_pair(common_name: str) -> tuple[str, str]:
    ca_key, ca = new_ca()
    key, cert = issue_cert(ca_key, ca, common_name=common_name, client=True)
    return (cert.public_bytes(serialization.Encoding.PEM).decode(),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()).decode())


def test_client_certificate_results_are_written_and_renewed_in_place(
        tmp_path: Path, plugin: Plugin, clock: FakeClock) -> None:
    expiry = (START + timedelta(hours=1)).isoformat()
    cert, key = _pem_pair("first")
    plugin.answer({"clientCertificateData": cert, "clientKeyData": key,
                   "expirationTimestamp": expiry})
    cfg = load_config(kubeconfig(tmp_path, exec_stanza(plugin)))
    settings = cfg.configuration
    assert isinstance(settings, ConnectionSettings)
    assert cfg.authorization() is None  # no token: the certificate authenticates
    assert settings.cert_file and settings.key_file
    cert_file, key_file = settings.cert_file, settings.key_file
    assert Path(cert_file).read_text() == cert and Path(key_file).read_text() == key
    assert oct(Path(key_file).stat().st_mode & 0o777) == "0o600"
    renewed_cert, renewed_key = _pem_pair("second")
    plugin.answer({"clientCertificateData": renewed_cert, "clientKeyData": renewed_key,
                   "token": "tok-9"})
    clock.step(3600)
    assert cfg.authorization() == "Bearer tok-9"
    assert (settings.cert_file, settings.key_file) == (cert_file, key_file)
    assert Path(cert_file).read_text() == renewed_cert
    assert Path(key_file).read_text() == renewed_key
    assert oct(Path(key_file).stat().st_mode & 0o777) == "0o600"


@pytest.mark.parametrize(("answer", "message"), [
    ({"status": {"token": "t"}, "exit": 3}, "exit status 3"),
    ({"status": {"token": "t"}, "apiVersion": V1BETA1}, "expected 'client.authentication"),
    ({"status": {}}, "neither a token nor a client certificate"),
    ({"status": {"clientCertificateData": "x"}}, "come together"),
    ({"status": {"token": "t", "expirationTimestamp": "soon"}}, "expirationTimestamp"),
])
def test_a_failing_plugin_fails_load_config(tmp_path: Path, plugin: Plugin, clock: FakeClock,
                                            answer: dict[str, Any], message: str) -> None:
    (plugin.dir / "answer.json").write_text(json.dumps(answer))
    with pytest.raises(ConfigError, match=message):
        load_config(kubeconfig(tmp_path, exec_stanza(plugin)))


def test_missing_command_names_the_install_hint(tmp_path: Path, clock: FakeClock) -> None:
    stanza = {"apiVersion": V1, "command": "no-such-credential-helper",
              "interactiveMode": "Never", "installHint": "brew install the-helper"}
    with pytest.raises(ConfigError, match=r"not found.*brew install the-helper"):
        load_config(kubeconfig(tmp_path, stanza))


def test_relative_command_resolves_against_the_kubeconfig(tmp_path: Path, plugin: Plugin,
                                                          clock: FakeClock) -> None:
    stanza = exec_stanza(plugin, command="./bin/plugin.py")
    assert load_config(kubeconfig(tmp_path, stanza)).authorization() == "Bearer tok-1"


def test_auth_provider_without_kubernetes_says_which_extra(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": "https://10.0.0.9:6443"}}],
        "users": [{"name": "u", "user": {"auth-provider": {"name": "oidc", "config": {}}}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}]}))
    for name in ["kubernetes", *(m for m in sys.modules if m.startswith("kubernetes."))]:
        monkeypatch.setitem(sys.modules, name, None)  # importing it fails, as uninstalled
    with pytest.raises(ConfigError, match=r"pip install 'pyctrl-k8s\[kubernetes\]'"):
        load_config(str(path))
