"""Exec credential plugins (a kubeconfig user's ``exec``), run natively as client-go does.

Contract:

* :class:`ExecPlugin` is built from a kubeconfig user's ``exec`` stanza (``apiVersion``
  ``client.authentication.k8s.io/v1`` or ``v1beta1``, ``command``, ``args``, ``env``,
  ``interactiveMode``, ``provideClusterInfo``) and the cluster it authenticates to. A relative
  command containing a path separator resolves against the kubeconfig file's directory; a bare
  name is looked up on ``$PATH``.
* :meth:`ExecPlugin.credential` runs the command (stdout read, stderr passed through) with the
  process environment plus ``env`` and ``KUBERNETES_EXEC_INFO``: an ``ExecCredential`` of the
  plugin's apiVersion whose ``spec.interactive`` says whether stdin is a terminal the plugin
  may use, and whose ``spec.cluster`` (``server``, ``certificate-authority-data``,
  ``insecure-skip-tls-verify``, ``tls-server-name``, ``proxy-url`` and the cluster's
  ``client.authentication.k8s.io/exec`` extension as ``config``) is set only with
  ``provideClusterInfo``. ``interactiveMode``: ``Never`` never hands over stdin;
  ``IfAvailable`` (v1beta1's default) hands it over when it is a terminal; ``Always`` fails
  (:class:`ExecCredentialError`) when it is not. v1 requires ``interactiveMode``.
* The plugin's output must be an ``ExecCredential`` of the same apiVersion whose ``status``
  has a ``token``, or ``clientCertificateData`` and ``clientKeyData`` (PEM), or both, and
  optionally ``expirationTimestamp`` (RFC 3339). The result is cached until that time (for
  ever without one); :meth:`ExecPlugin.invalidate` drops it (the RESTClient does after a 401,
  then retries the request once with a fresh credential). A non-zero exit,
  a timeout (``timeout``, 60 s by default), unparsable output or a missing credential raise
  :class:`ExecCredentialError` naming the command (and the ``installHint`` when the command
  is not found).
* Calls are serialised: concurrent callers wait for one run of the plugin.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pyctrl.clock import Clock, RealClock
from pyctrl.kube.meta import parse_micro_time

__all__ = ["API_VERSIONS", "ExecCredential", "ExecCredentialError", "ExecPlugin"]

API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
_MODES = ("Never", "IfAvailable", "Always")
_EXEC_EXTENSION = "client.authentication.k8s.io/exec"


class ExecCredentialError(RuntimeError):
    """An exec credential plugin could not be run or gave no usable credential."""


@dataclass(frozen=True, slots=True)
class ExecCredential:
    """What a plugin returned: a bearer token and/or a client certificate and key (PEM)."""

    token: str | None = None
    client_certificate_data: str | None = None
    client_key_data: str | None = None
    expires_at: datetime | None = None


def _cluster_info(cluster: Mapping[str, Any]) -> dict[str, Any]:
    """ExecCredential's spec.cluster (client-go's Cluster type spells its fields as the
    kubeconfig does); a ``certificate-authority`` file (an absolute path here) is handed over
    as its bytes, as client-go does."""
    info: dict[str, Any] = {"server": cluster.get("server")}
    for key in ("certificate-authority-data", "tls-server-name", "proxy-url"):
        if cluster.get(key):
            info[key] = cluster[key]
    if cluster.get("certificate-authority") and "certificate-authority-data" not in info:
        raw = Path(cluster["certificate-authority"]).read_bytes()
        info["certificate-authority-data"] = base64.b64encode(raw).decode()
    if cluster.get("insecure-skip-tls-verify"):
        info["insecure-skip-tls-verify"] = True
    for ext in cluster.get("extensions") or []:
        if isinstance(ext, dict) and ext.get("name") == _EXEC_EXTENSION:
            info["config"] = ext.get("extension")
    return info


@dataclass(eq=False)
class ExecPlugin:
    """One kubeconfig user's exec plugin (see the module docstring)."""

    command: str
    api_version: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    interactive_mode: str = "IfAvailable"
    provide_cluster_info: bool = False
    cluster: Mapping[str, Any] = field(default_factory=dict)
    install_hint: str | None = None
    base_dir: Path = Path(".")
    timeout: float = 60.0
    clock: Clock = field(default_factory=RealClock)
    stdin_is_tty: Callable[[], bool] = field(default=lambda: sys.stdin is not None
                                             and sys.stdin.isatty())
    _cached: ExecCredential | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def from_kubeconfig(cls, stanza: Mapping[str, Any], cluster: Mapping[str, Any],
                        base_dir: Path, clock: Clock | None = None) -> ExecPlugin:
        """From a user's ``exec`` mapping and its cluster (raises ValueError when invalid)."""
        api_version = stanza.get("apiVersion")
        if api_version not in API_VERSIONS:
            raise ValueError(f"exec plugin: apiVersion {api_version!r} is not one of "
                             f"{', '.join(API_VERSIONS)}")
        command = stanza.get("command")
        if not isinstance(command, str) or not command:
            raise ValueError("exec plugin: command is required")
        mode = stanza.get("interactiveMode")
        if mode is None:
            if api_version.endswith("/v1"):
                raise ValueError("exec plugin: interactiveMode is required in v1")
            mode = "IfAvailable"
        if mode not in _MODES:
            raise ValueError(f"exec plugin: interactiveMode {mode!r} is not one of "
                             f"{', '.join(_MODES)}")
        env: dict[str, str] = {}
        for entry in stanza.get("env") or []:
            env[str(entry["name"])] = str(entry["value"])
        provide = bool(stanza.get("provideClusterInfo"))
        return cls(command=command, api_version=api_version,
                   args=tuple(str(a) for a in stanza.get("args") or ()), env=env,
                   interactive_mode=mode, provide_cluster_info=provide,
                   cluster=_cluster_info(cluster) if provide else {},
                   install_hint=stanza.get("installHint"), base_dir=base_dir,
                   clock=clock or RealClock())

    def credential(self) -> ExecCredential:
        """The cached credential, or a fresh one from the plugin once it expired."""
        with self._lock:
            cached = self._cached
            if cached is not None and (cached.expires_at is None
                                       or self.clock.now() < cached.expires_at):
                return cached
            self._cached = self._run()
            return self._cached

    def invalidate(self) -> None:
        """Forget the cached credential (the server refused it): the next call reruns."""
        with self._lock:
            self._cached = None

    def _executable(self) -> str:
        if os.sep in self.command and not os.path.isabs(self.command):
            return str(self.base_dir / self.command)
        found = shutil.which(self.command)
        if found is None and not os.path.exists(self.command):
            hint = f" ({self.install_hint.strip()})" if self.install_hint else ""
            raise ExecCredentialError(
                f"exec plugin: executable {self.command!r} not found{hint}")
        return found or self.command

    def _run(self) -> ExecCredential:
        tty = self.stdin_is_tty()
        if self.interactive_mode == "Always" and not tty:
            raise ExecCredentialError(
                f"exec plugin {self.command!r}: interactiveMode is Always but stdin is not "
                "a terminal")
        interactive = tty and self.interactive_mode != "Never"
        spec: dict[str, Any] = {"interactive": interactive}
        if self.provide_cluster_info:
            spec["cluster"] = dict(self.cluster)
        exec_info = {"apiVersion": self.api_version, "kind": "ExecCredential", "spec": spec}
        environ = {**os.environ, **self.env, "KUBERNETES_EXEC_INFO": json.dumps(exec_info)}
        argv = [self._executable(), *self.args]
        try:
            done = subprocess.run(argv, env=environ, stdout=subprocess.PIPE, stderr=None,
                                  stdin=None if interactive else subprocess.DEVNULL,
                                  timeout=self.timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise ExecCredentialError(
                f"exec plugin {self.command!r}: no answer within {self.timeout:g} s") from exc
        except OSError as exc:
            raise ExecCredentialError(f"exec plugin {self.command!r}: {exc}") from exc
        if done.returncode != 0:
            raise ExecCredentialError(
                f"exec plugin {self.command!r}: exit status {done.returncode}")
        return self._parse(done.stdout)

    def _parse(self, stdout: bytes) -> ExecCredential:
        where = f"exec plugin {self.command!r}"
        try:
            doc = json.loads(stdout)
        except ValueError as exc:
            raise ExecCredentialError(f"{where}: output is not JSON: {exc}") from exc
        if not isinstance(doc, dict) or doc.get("kind") != "ExecCredential":
            raise ExecCredentialError(f"{where}: output is not an ExecCredential")
        if doc.get("apiVersion") != self.api_version:
            raise ExecCredentialError(
                f"{where}: output apiVersion {doc.get('apiVersion')!r}, expected "
                f"{self.api_version!r}")
        status = doc.get("status")
        if not isinstance(status, dict):
            raise ExecCredentialError(f"{where}: output has no status")
        cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
        if bool(cert) != bool(key):
            raise ExecCredentialError(
                f"{where}: clientCertificateData and clientKeyData come together")
        token = status.get("token") or None
        if not token and not cert:
            raise ExecCredentialError(f"{where}: status has neither a token nor a client "
                                      "certificate")
        expires = status.get("expirationTimestamp")
        expires_at = parse_micro_time(expires)
        if expires and expires_at is None:
            raise ExecCredentialError(f"{where}: expirationTimestamp {expires!r}")
        return ExecCredential(token=token, client_certificate_data=cert or None,
                              client_key_data=key or None, expires_at=expires_at)

