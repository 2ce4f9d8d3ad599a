"""Where the API server is and how to authenticate to it.

Contract: :func:`load_config` returns a :class:`KubeConfig`. The in-cluster service account
and kubeconfig contexts whose user has a token, token file, client certificate, basic auth or
an exec credential plugin (client.authentication.k8s.io/v1 and v1beta1, as EKS, GKE and AKS
use; :mod:`pyctrl.kube._exec`), on clusters with or without a ``proxy-url``, are loaded by
:mod:`pyctrl.kube._kubeconfig` without the ``kubernetes`` package; the configuration is then a
:class:`~pyctrl.kube._kubeconfig.ConnectionSettings`. Any other context (legacy
``auth-provider`` plugins, impersonation, ...) needs the optional ``kubernetes`` package (the
``kubernetes`` extra: ``pip install 'pyctrl-k8s[kubernetes]'``; :class:`ConfigError` says so
when it is missing), whose loaders then fill a ``kubernetes.client.Configuration``, token
refresh through ``Configuration.refresh_api_key_hook`` included (called by
:meth:`KubeConfig.authorization` on every request, which is cheap: the hooks only reload once
their token has expired). Both kinds have the attributes the RESTClient reads. A failing exec
plugin fails :func:`load_config` with :class:`ConfigError`; later (its credential expired, or
renewed by :meth:`KubeConfig.renew_credentials` after a 401) the request that runs it raises
its :class:`~pyctrl.kube._exec.ExecCredentialError`.

Lookup order for ``load_config(kubeconfig=None)`` (the controller-runtime order, except that an
existing ``~/.kube/config`` wins over the pod's service account, so a developer's laptop inside
a dev container still talks to the cluster they chose):

1. the ``kubeconfig`` argument (a path; raises :class:`ConfigError` if it does not exist);
2. ``$KUBECONFIG`` (one or more paths separated by ``os.pathsep``, merged by ``kubernetes``);
3. ``~/.kube/config`` if the file exists;
4. the in-cluster service account when :func:`in_cluster` is true and no ``context`` was asked;
5. otherwise :class:`ConfigError`.

``pyctrl.kube`` is the only pyctrl package that imports ``kubernetes``.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from pyctrl.kube._exec import ExecCredentialError
from pyctrl.kube._kubeconfig import ConnectionSettings, in_cluster_settings, load_kubeconfig

if TYPE_CHECKING:
    from kubernetes.client import Configuration

__all__ = ["ConfigError", "KubeConfig", "in_cluster", "load_config"]

_SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class ConfigError(Exception):
    """No usable cluster configuration was found, or it could not be loaded."""


def in_cluster(environ: dict[str, str] | None = None, sa_dir: Path | None = None) -> bool:
    """True when running in a pod: service host/port env vars set and a token file mounted."""
    env = os.environ if environ is None else environ
    directory = _SA_DIR if sa_dir is None else sa_dir
    return (
        bool(env.get("KUBERNETES_SERVICE_HOST"))
        and bool(env.get("KUBERNETES_SERVICE_PORT"))
        and (directory / "token").is_file()
    )


@dataclass(frozen=True, eq=False)
class KubeConfig:
    """A loaded cluster configuration (:class:`ConnectionSettings` or a ``kubernetes``
    Configuration, see the module docstring) plus where it came from.

    ``source`` is the kubeconfig path(s), ``"in-cluster"`` or ``"explicit"``; ``context`` is
    the kubeconfig context used (None for in-cluster or explicit configs).
    """

    configuration: ConnectionSettings | Configuration
    source: str = "explicit"
    context: str | None = None
    _auth_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def from_url(cls, host: str, *, token: str | None = None, verify_ssl: bool = True,
                 ca_cert: str | None = None) -> KubeConfig:
        """A config for ``host`` (e.g. ``http://127.0.0.1:8080``) with an optional bearer token."""
        return cls(ConnectionSettings(host=host.rstrip("/"), verify_ssl=verify_ssl,
                                      ssl_ca_cert=ca_cert, token=token))

    @property
    def host(self) -> str:
        """The server URL without a trailing slash, e.g. ``https://127.0.0.1:6443``."""
        return str(self.configuration.host).rstrip("/")

    @property
    def netloc(self) -> str:
        """``host:port`` of the server (the ``host`` label of request metrics)."""
        return urlsplit(self.host).netloc

    def renew_credentials(self) -> bool:
        """Forget a cached exec-plugin credential (the server refused it with a 401), so the
        next :meth:`authorization` runs the plugin again; False when there is none to renew."""
        cfg = self.configuration
        if isinstance(cfg, ConnectionSettings) and cfg.exec_plugin is not None:
            cfg.exec_plugin.invalidate()
            return True
        return False

    def authorization(self) -> str | None:
        """The ``Authorization`` header value, refreshed if the token expired, or None.

        Runs ``refresh_api_key_hook`` (exec plugins, rotated service-account tokens) under a
        lock because the ``kubernetes`` loaders mutate shared state while refreshing.
        """
        cfg = self.configuration
        if isinstance(cfg, ConnectionSettings):
            return cfg.authorization()
        if "BearerToken" not in cfg.api_key and "authorization" not in cfg.api_key:
            if cfg.username and cfg.password:
                return str(cfg.get_basic_auth_token())
            return None
        with self._auth_lock:
            value = cfg.get_api_key_with_prefix("BearerToken", alias="authorization")
        return str(value) if value else None


def _kubeconfig_paths(kubeconfig: str | None) -> str | None:
    if kubeconfig is not None:
        if not Path(kubeconfig).expanduser().is_file():
            raise ConfigError(f"kubeconfig {kubeconfig!r} does not exist")
        return str(Path(kubeconfig).expanduser())
    env = os.environ.get("KUBECONFIG", "")
    if any(p for p in env.split(os.pathsep)):
        return env
    default = Path("~/.kube/config").expanduser()
    return str(default) if default.is_file() else None


def load_config(kubeconfig: str | None = None, context: str | None = None) -> KubeConfig:
    """Load a :class:`KubeConfig` (lookup order in the module docstring)."""
    paths = _kubeconfig_paths(kubeconfig)
    if paths is None:
        if context is None and in_cluster():
            try:
                return KubeConfig(in_cluster_settings(os.environ, _SA_DIR), source="in-cluster")
            except (OSError, KeyError) as exc:
                raise ConfigError(f"in-cluster config: {exc}") from exc
        raise ConfigError(
            "no kubeconfig (argument, $KUBECONFIG or ~/.kube/config) and not running in a pod"
        )
    try:
        native = load_kubeconfig(paths, context)
    except (OSError, KeyError, ValueError, TypeError, ExecCredentialError) as exc:
        # One line: a KeyError's str() quotes its message, a YAML error spans lines.
        detail = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        raise ConfigError(f"kubeconfig {paths}: {' '.join(str(detail).split())}") from exc
    if native is not None:
        settings, used = native
        return KubeConfig(settings, source=paths, context=used)
    return _load_with_kubernetes(paths, context)


def _load_with_kubernetes(paths: str, context: str | None) -> KubeConfig:
    """A context :mod:`pyctrl.kube._kubeconfig` does not handle, by ``kubernetes``' loader."""
    try:
        from kubernetes.client import Configuration
    except ImportError as exc:
        raise ConfigError(
            f"kubeconfig {paths}: context {context or '(current)'} needs the kubernetes "
            "package (an auth-provider plugin, impersonation or another setting pyctrl does "
            "not load itself): pip install 'pyctrl-k8s[kubernetes]'") from exc
    from kubernetes.config import kube_config
    from kubernetes.config.config_exception import ConfigException

    cfg = Configuration()
    try:
        kube_config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=paths, context=context, client_configuration=cfg, persist_config=False
        )
        _contexts, active = kube_config.list_kube_config_contexts(  # type: ignore[no-untyped-call]
            config_file=paths
        )
    except (ConfigException, OSError, KeyError, ValueError) as exc:
        raise ConfigError(f"kubeconfig {paths}: {exc}") from exc
    used = context if context is not None else (active or {}).get("name")
    return KubeConfig(cfg, source=paths, context=used)
