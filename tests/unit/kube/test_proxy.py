"""Which proxy a client uses, decided natively as client-go does (pyctrl.kube.pool)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import urllib3
import yaml

from pyctrl.kube._kubeconfig import ConnectionSettings
from pyctrl.kube.client import RESTClient
from pyctrl.kube.config import load_config
from pyctrl.kube.pool import build_pool, proxy_for

PROXY = "http://proxy.corp:3128"


@pytest.mark.parametrize(("host", "environ", "expected"), [
    ("https://api.example.com", {}, None),
    ("https://api.example.com", {"HTTPS_PROXY": PROXY}, PROXY),
    ("https://api.example.com", {"https_proxy": PROXY}, PROXY),
    ("https://api.example.com", {"HTTPS_PROXY": PROXY, "https_proxy": "http://other"}, PROXY),
    ("https://api.example.com", {"HTTP_PROXY": PROXY}, None),  # https needs HTTPS_PROXY
    ("http://api.example.com", {"HTTP_PROXY": PROXY}, PROXY),
    ("https://127.0.0.1:6443", {"HTTPS_PROXY": PROXY}, None),  # loopback: never
    ("https://[::1]:6443", {"HTTPS_PROXY": PROXY}, None),
    ("https://localhost:6443", {"HTTPS_PROXY": PROXY}, None),
    ("https://api.example.com", {"HTTPS_PROXY": PROXY, "NO_PROXY": "example.com"}, None),
    ("https://api.example.com", {"HTTPS_PROXY": PROXY, "no_proxy": ".example.com"}, None),
    ("https://example.com", {"HTTPS_PROXY": PROXY, "NO_PROXY": ".example.com"}, None),
    ("https://badexample.com", {"HTTPS_PROXY": PROXY, "NO_PROXY": "example.com"}, PROXY),
    ("https://api.example.com", {"HTTPS_PROXY": PROXY, "NO_PROXY": "other.org, *"}, None),
    ("https://10.1.2.3:6443", {"HTTPS_PROXY": PROXY, "NO_PROXY": "10.0.0.0/8"}, None),
    ("https://11.1.2.3:6443", {"HTTPS_PROXY": PROXY, "NO_PROXY": "10.0.0.0/8"}, PROXY),
    ("https://10.1.2.3:6443", {"HTTPS_PROXY": PROXY, "NO_PROXY": "10.1.2.3"}, None),
    ("https://10.1.2.3:6443", {"HTTPS_PROXY": PROXY, "NO_PROXY": "10.1.2.3:443"}, PROXY),
    ("https://api.example.com", {"HTTPS_PROXY": PROXY, "NO_PROXY": "api.example.com:443"},
     None),
    ("https://[fd00::1]:6443", {"HTTPS_PROXY": PROXY, "NO_PROXY": "fd00::/16"}, None),
])
def test_proxy_from_the_environment(host: str, environ: dict[str, str],
                                    expected: str | None) -> None:
    assert proxy_for(ConnectionSettings(host=host), environ) == expected


def test_kubeconfig_proxy_url_wins_over_the_environment(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": "https://10.0.0.9:6443",
                                               "proxy-url": PROXY}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}]}))
    monkeypatch.delitem(sys.modules, "kubernetes", raising=False)
    cfg = load_config(str(path))
    settings = cfg.configuration
    assert isinstance(settings, ConnectionSettings) and settings.proxy == PROXY
    env = {"HTTPS_PROXY": "http://elsewhere:1", "NO_PROXY": "10.0.0.9"}
    assert proxy_for(settings, env) == PROXY  # proxy-url ignores the environment's lists
    pool = build_pool(settings, 4, env)
    assert isinstance(pool, urllib3.ProxyManager) and pool.proxy is not None
    assert pool.proxy.host == "proxy.corp" and pool.proxy.port == 3128
    client = RESTClient(cfg)
    try:
        assert client._lean is None  # proxied requests go through urllib3's ProxyManager
    finally:
        client.close()
    assert "kubernetes" not in sys.modules


def test_no_proxy_setting_of_a_configuration_bypasses_its_proxy() -> None:
    settings = ConnectionSettings(host="https://api.internal:6443", proxy=PROXY,
                                  no_proxy="internal")
    assert proxy_for(settings, {}) is None
    assert not isinstance(build_pool(settings, 4, {}), urllib3.ProxyManager)
