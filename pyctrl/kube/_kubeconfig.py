"""The common cluster configurations, loaded without importing the ``kubernetes`` package.

Importing ``kubernetes`` (its generated client, pydantic, requests, oauthlib, ...) was about a
third of the controller's start-up import time. This module loads what nearly every
deployment uses, and :mod:`pyctrl.kube.config` falls back to ``kubernetes``' own loaders
(imported only then) for everything else.

Contract:

* :class:`ConnectionSettings` carries what the RESTClient reads from a ``kubernetes``
  ``Configuration`` (the same attribute names: ``host``, ``verify_ssl``, ``ssl_ca_cert``,
  ``ca_cert_data``, ``cert_file``, ``key_file``, ``assert_hostname``, ``tls_server_name``,
  ``proxy``, ``proxy_headers``, ``no_proxy``) and answers :meth:`~ConnectionSettings.authorization`
  itself: a fixed token, a token file re-read at most once a minute (rotated service-account
  tokens), an exec credential plugin's token (:mod:`pyctrl.kube._exec`: run at load and
  again when its credential expires; a client certificate it returns is written to the
  ``cert_file``/``key_file`` pair, replaced atomically on renewal, so new connections present
  it), or basic auth.
* :func:`in_cluster_settings` is the pod's service account: ``https://`` +
  ``$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`` (IPv6 bracketed), the mounted CA and
  token file (the header reads ``bearer <token>``, as ``kubernetes``' loader writes it).
* :func:`load_kubeconfig` reads kubeconfig files (``os.pathsep``-separated paths merged as
  kubectl does: the first file that names a cluster, user or context wins, the first
  ``current-context`` wins; relative file paths resolve against the file that named them) and
  returns the settings of ``context`` (default: the current one) and its name, or None when
  that context needs more than this module does: a user with anything but ``token``,
  ``tokenFile``, ``client-certificate[-data]``, ``client-key[-data]``, ``username``,
  ``password`` and ``exec`` (legacy auth providers, impersonation, ...), or a cluster with
  anything but ``server``, ``certificate-authority[-data]``, ``insecure-skip-tls-verify``,
  ``tls-server-name``, ``proxy-url`` and ``extensions``. ``proxy-url`` becomes ``proxy``
  (:mod:`pyctrl.kube.pool` decides whether it is used). A missing context or cluster or
  user raises :class:`KeyError`; an unreadable file :class:`OSError`; undecodable YAML or base64
  :class:`ValueError`.
* Client certificate and key data are written to private (0600) temporary files for the TLS
  layer, removed at interpreter exit; CA data is handed over in memory.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import os
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyctrl.clock import RealClock
from pyctrl.kube._exec import ExecCredential, ExecPlugin

__all__ = ["ConnectionSettings", "in_cluster_settings", "load_kubeconfig"]

_TOKEN_FILE_REFRESH = 60.0  # seconds, as kubernetes' in-cluster loader
_USER_KEYS = frozenset({"token", "tokenFile", "client-certificate", "client-certificate-data",
                        "client-key", "client-key-data", "username", "password", "exec"})
_CLUSTER_KEYS = frozenset({"server", "certificate-authority", "certificate-authority-data",
                           "insecure-skip-tls-verify", "tls-server-name", "proxy-url",
                           "extensions"})
_CLOCK = RealClock()
_temp_files: list[str] = []
_temp_lock = threading.Lock()


@dataclass(eq=False)
class ConnectionSettings:
    """Where the API server is and how to authenticate (see module docstring)."""

    host: str
    verify_ssl: bool = True
    ssl_ca_cert: str | None = None
    ca_cert_data: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    assert_hostname: str | None = None
    tls_server_name: str | None = None
    proxy: str | None = None
    proxy_headers: dict[str, str] | None = None
    no_proxy: str | None = None
    token: str | None = None
    token_file: str | None = None
    token_scheme: str = "Bearer"
    username: str | None = None
    password: str | None = None
    exec_plugin: ExecPlugin | None = None
    _exec_cert: ExecCredential | None = field(default=None, repr=False)
    _token_read_at: float | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def authorization(self) -> str | None:
        """The ``Authorization`` header value, or None."""
        if self.token_file is not None:
            with self._lock:
                now = _CLOCK.monotonic()
                if self._token_read_at is None or now - self._token_read_at >= (
                        _TOKEN_FILE_REFRESH):
                    self.token = Path(self.token_file).read_text().strip()
                    self._token_read_at = now
        if self.exec_plugin is not None:
            credential = self.exec_plugin.credential()
            if credential.client_certificate_data:
                self._use_client_certificate(credential)
            if credential.token:
                return f"Bearer {credential.token}"
        if self.token:
            return f"{self.token_scheme} {self.token}"
        if self.username and self.password:
            raw = f"{self.username}:{self.password}".encode()
            return "Basic " + base64.b64encode(raw).decode()
        return None


    def _use_client_certificate(self, credential: ExecCredential) -> None:
        with self._lock:
            if credential is self._exec_cert:
                return
            assert credential.client_certificate_data and credential.client_key_data
            cert = credential.client_certificate_data.encode()
            key = credential.client_key_data.encode()
            if self._exec_cert is None or self.cert_file is None or self.key_file is None:
                self.cert_file, self.key_file = _private_file(cert), _private_file(key)
            else:  # renewed: replace the pair (ours) that new connections load
                _replace(self.key_file, key)
                _replace(self.cert_file, cert)
            self._exec_cert = credential


def in_cluster_settings(environ: dict[str, str] | os._Environ[str],
                        sa_dir: Path) -> ConnectionSettings:
    """The pod's service-account settings (see module docstring)."""
    host, port = environ["KUBERNETES_SERVICE_HOST"], environ["KUBERNETES_SERVICE_PORT"]
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    settings = ConnectionSettings(host=f"https://{host}:{port}",
                                  ssl_ca_cert=str(sa_dir / "ca.crt"),
                                  token_file=str(sa_dir / "token"), token_scheme="bearer")
    settings.authorization()  # fail now (OSError) if the token cannot be read
    return settings


def _named(doc: dict[str, Any], kind: str, base: Path,
           into: dict[str, tuple[dict[str, Any], Path]]) -> None:
    for entry in doc.get(kind) or []:
        name = entry.get("name") if isinstance(entry, dict) else None
        if isinstance(name, str) and name not in into:
            into[name] = (entry.get(kind[:-1]) or {}, base)


def _file(value: str, base: Path) -> str:
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else base / path)


def _data_file(data: str) -> str:
    """Decoded base64 ``data`` in a private temporary file (removed at exit)."""
    return _private_file(base64.b64decode(data, validate=True))


def _replace(path: str, raw: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix="pyctrl-kubeconfig-", dir=os.path.dirname(path))
    try:
        os.write(fd, raw)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _private_file(raw: bytes) -> str:
    """``raw`` in a private temporary file (removed at exit)."""
    fd, path = tempfile.mkstemp(prefix="pyctrl-kubeconfig-")
    try:
        os.write(fd, raw)
    finally:
        os.close(fd)
    with _temp_lock:
        if not _temp_files:
            atexit.register(_remove_temp_files)
        _temp_files.append(path)
    return path


def _remove_temp_files() -> None:
    with _temp_lock:
        for path in _temp_files:
            with contextlib.suppress(OSError):
                os.remove(path)
        _temp_files.clear()


def load_kubeconfig(paths: str, context: str | None,
                    ) -> tuple[ConnectionSettings, str] | None:
    """The settings of ``context`` in the kubeconfig ``paths`` (see module docstring)."""
    import yaml  # only here: the controller reads a kubeconfig once, at start

    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    clusters: dict[str, tuple[dict[str, Any], Path]] = {}
    users: dict[str, tuple[dict[str, Any], Path]] = {}
    contexts: dict[str, tuple[dict[str, Any], Path]] = {}
    current: str | None = None
    for raw in paths.split(os.pathsep):
        if not raw:
            continue
        path = Path(raw).expanduser()
        try:
            doc = yaml.load(path.read_text(), Loader=loader) or {}
        except yaml.YAMLError as exc:
            raise ValueError(f"{path}: {exc}") from exc
        if not isinstance(doc, dict):
            raise ValueError(f"{path}: not a kubeconfig")
        base = path.parent
        _named(doc, "clusters", base, clusters)
        _named(doc, "users", base, users)
        _named(doc, "contexts", base, contexts)
        if current is None and doc.get("current-context"):
            current = str(doc["current-context"])
    name = context if context is not None else current
    if not name:
        raise KeyError("no current-context and no context given")
    if name not in contexts:
        raise KeyError(f"no context {name!r} (it has: {', '.join(sorted(contexts)) or 'none'})")
    ctx, _ = contexts[name]
    for kind, names in (("cluster", clusters), ("user", users)):
        if ctx.get(kind) and ctx[kind] not in names:
            raise KeyError(f"context {name!r} names {kind} {ctx[kind]!r}, which is not there")
    cluster, cluster_base = clusters[ctx["cluster"]]
    user, user_base = users[ctx["user"]] if ctx.get("user") else ({}, Path("."))
    if set(user) - _USER_KEYS or set(cluster) - _CLUSTER_KEYS or set(ctx) - {
            "cluster", "user", "namespace", "extensions"}:
        return None
    settings = ConnectionSettings(host=str(cluster["server"]).rstrip("/"))
    settings.verify_ssl = not cluster.get("insecure-skip-tls-verify", False)
    if cluster.get("certificate-authority-data"):
        pem = base64.b64decode(cluster["certificate-authority-data"], validate=True)
        settings.ca_cert_data = pem.decode()
    elif cluster.get("certificate-authority"):
        settings.ssl_ca_cert = _file(cluster["certificate-authority"], cluster_base)
    settings.tls_server_name = cluster.get("tls-server-name") or None
    settings.proxy = cluster.get("proxy-url") or None
    if user.get("exec"):
        plugin_cluster = dict(cluster)
        if cluster.get("certificate-authority"):  # relative to the file naming the cluster
            plugin_cluster["certificate-authority"] = settings.ssl_ca_cert
        settings.exec_plugin = ExecPlugin.from_kubeconfig(user["exec"], plugin_cluster,
                                                           user_base, _CLOCK)
    if user.get("client-certificate-data"):
        settings.cert_file = _data_file(user["client-certificate-data"])
    elif user.get("client-certificate"):
        settings.cert_file = _file(user["client-certificate"], user_base)
    if user.get("client-key-data"):
        settings.key_file = _data_file(user["client-key-data"])
    elif user.get("client-key"):
        settings.key_file = _file(user["client-key"], user_base)
    if user.get("token"):
        settings.token = str(user["token"])
    elif user.get("tokenFile"):
        settings.token_file = _file(user["tokenFile"], user_base)
    settings.username = user.get("username")
    settings.password = user.get("password")
    settings.authorization()  # a token file that cannot be read, or a failing plugin, fails now
    return settings, name
