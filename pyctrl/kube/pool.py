"""The connection settings the REST client's senders share, from a cluster configuration.

Contract (``cfg`` a :class:`~pyctrl.kube._kubeconfig.ConnectionSettings` or a ``kubernetes``
``Configuration``: the same attribute names):

* :func:`connection_kwargs` is the urllib3 connection keywords for its TLS and client
  certificate settings: ``cert_reqs`` (``CERT_REQUIRED`` unless ``verify_ssl`` is off),
  ``ca_certs``, ``ca_cert_data``, ``cert_file``, ``key_file``, plus ``assert_hostname`` and
  ``server_hostname`` (from ``tls_server_name``) when set. The urllib3 pool and the lean
  :class:`~pyctrl.kube.transport.UnaryTransport` both get exactly these, so both verify alike.
* :func:`proxied` says whether requests to ``cfg.host`` go through ``cfg.proxy`` (set, and
  the host not matched by ``no_proxy``, as the ``kubernetes`` client decides; that check
  imports ``kubernetes`` only when a proxy is configured).
* :func:`build_pool` is a keep-alive ``urllib3`` pool manager (4 pools, ``maxsize``
  connections per host, non-blocking) with those keywords, a ``ProxyManager`` (with
  ``proxy_headers``) when :func:`proxied`.
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING, Any

import urllib3

from pyctrl.kube._kubeconfig import ConnectionSettings

if TYPE_CHECKING:
    from kubernetes.client import Configuration

__all__ = ["build_pool", "connection_kwargs", "proxied"]


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


def proxied(cfg: ConnectionSettings | Configuration) -> bool:
    """Whether requests to the configured host go through its proxy."""
    if not cfg.proxy:
        return False
    from kubernetes.client.rest import should_bypass_proxies  # only with a proxy configured

    return not should_bypass_proxies(cfg.host, cfg.no_proxy or "")


def build_pool(cfg: ConnectionSettings | Configuration, maxsize: int) -> urllib3.PoolManager:
    """A keep-alive pool honouring the Configuration's TLS, client-cert and proxy settings."""
    kw: dict[str, Any] = {"num_pools": 4, "maxsize": maxsize, "block": False,
                          **connection_kwargs(cfg)}
    if cfg.proxy and proxied(cfg):
        return urllib3.ProxyManager(proxy_url=cfg.proxy, proxy_headers=cfg.proxy_headers, **kw)
    return urllib3.PoolManager(**kw)
