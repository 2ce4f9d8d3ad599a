"""The connection settings the REST client's senders share, from a cluster configuration.

Contract (``cfg`` a :class:`~pyctrl.kube._kubeconfig.ConnectionSettings` or a ``kubernetes``
``Configuration``: the same attribute names):

* :func:`connection_kwargs` is the urllib3 connection keywords for its TLS and client
  certificate settings: ``cert_reqs`` (``CERT_REQUIRED`` unless ``verify_ssl`` is off),
  ``ca_certs``, ``ca_cert_data``, ``cert_file``, ``key_file``, plus ``assert_hostname`` and
  ``server_hostname`` (from ``tls_server_name``) when set. The urllib3 pool and the lean
  :class:`~pyctrl.kube.transport.UnaryTransport` both get exactly these, so both verify alike.
* :func:`proxy_for` is the proxy requests to ``cfg.host`` go through, or None, decided as
  client-go does: ``cfg.proxy`` (a kubeconfig cluster's ``proxy-url``) when set, unless
  ``cfg.no_proxy`` matches the host; otherwise the environment: ``HTTPS_PROXY`` (for an
  ``https`` server; ``HTTP_PROXY`` for ``http``; upper case first, then lower case) unless
  ``NO_PROXY``/``no_proxy`` matches the host, and never for ``localhost`` or a loopback
  address. A no-proxy list is comma-separated: ``*`` (everything), a domain (``example.com``
  and ``.example.com`` both match the domain and its subdomains), a host or IP with an
  optional ``:port``, or a CIDR. :func:`proxied` is ``proxy_for(...) is not None``.
* :func:`build_pool` is a keep-alive ``urllib3`` pool manager (4 pools, ``maxsize``
  connections per host, non-blocking) with those keywords, a ``ProxyManager`` (with
  ``proxy_headers``) when :func:`proxy_for` names a proxy.
"""

from __future__ import annotations

import ipaddress
import os
import ssl
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import urllib3

from pyctrl.kube._kubeconfig import ConnectionSettings

if TYPE_CHECKING:
    from kubernetes.client import Configuration

__all__ = ["build_pool", "connection_kwargs", "proxied", "proxy_for"]


def connection_kwargs(cfg: ConnectionSettings | Configuration) -> dict[str, Any]:
    """urllib3 connection keywords for the Configuration's TLS and client-cert settings."""
    kw: dict[str, Any] = {
        "cert_reqs": ssl.CERT_REQUIRED if cfg.verify_ssl else ssl.CERT_NONE,
        "ca_certs": cfg.ssl_ca_cert,
        "ca_cert_data": cfg.ca_cert_data,
        "cert_file": cfg.cert_file,
        "key_file": cfg.key_file,
    }
    if cfg.assert_hostname is not None:
        kw["assert_hostname"] = cfg.assert_hostname
    if cfg.tls_server_name:
        kw["server_hostname"] = cfg.tls_server_name
    return kw


def _no_proxy_matches(no_proxy: str, host: str, port: int | None) -> bool:
    try:
        ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
    except ValueError:
        ip = None
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return True
        if "/" in entry:
            try:
                if ip is not None and ip in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                pass
            continue
        parsed = urllib3.util.parse_url(f"//{entry}")
        want_host, want_port = (parsed.host or "").strip("[]"), parsed.port
        if want_port is not None and want_port != port:
            continue
        if ip is not None:
            try:
                if ipaddress.ip_address(want_host) == ip:
                    return True
            except ValueError:
                pass
            continue
        domain = want_host.lstrip(".")
        if host == domain or host.endswith("." + domain):
            return True
    return False


def proxy_for(cfg: ConnectionSettings | Configuration,
              environ: Mapping[str, str] | None = None) -> str | None:
    """The proxy for requests to ``cfg.host``, or None (rules in the module docstring)."""
    url = urllib3.util.parse_url(str(cfg.host))
    host = (url.host or "").strip("[]").lower()
    port = url.port or (443 if url.scheme == "https" else 80)
    if cfg.proxy:
        return None if cfg.no_proxy and _no_proxy_matches(cfg.no_proxy, host, port) else (
            str(cfg.proxy))
    env = os.environ if environ is None else environ
    name = "https_proxy" if url.scheme == "https" else "http_proxy"
    proxy = env.get(name.upper()) or env.get(name)
    if not proxy or host == "localhost":
        return None
    try:
        if ipaddress.ip_address(host).is_loopback:
            return None
    except ValueError:
        pass
    no_proxy = env.get("NO_PROXY") or env.get("no_proxy") or ""
    return None if _no_proxy_matches(no_proxy, host, port) else proxy


def proxied(cfg: ConnectionSettings | Configuration,
            environ: Mapping[str, str] | None = None) -> bool:
    """Whether requests to the configured host go through a proxy."""
    return proxy_for(cfg, environ) is not None


def build_pool(cfg: ConnectionSettings | Configuration, maxsize: int,
               environ: Mapping[str, str] | None = None) -> urllib3.PoolManager:
    """A keep-alive pool honouring the Configuration's TLS, client-cert and proxy settings."""
    kw: dict[str, Any] = {"num_pools": 4, "maxsize": maxsize, "block": False,
                          **connection_kwargs(cfg)}
    proxy = proxy_for(cfg, environ)
    if proxy is not None:
        return urllib3.ProxyManager(proxy_url=proxy, proxy_headers=cfg.proxy_headers, **kw)
    return urllib3.PoolManager(**kw)
