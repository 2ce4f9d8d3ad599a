"""Where the API server is and how to authenticate to it.

Contract: :func:`load_config` returns a :class:`KubeConfig` wrapping a
``kubernetes.client.Configuration`` filled by the ``kubernetes`` package's own loaders, so
everything they support keeps working: contexts, client certificates, CA bundles, exec
credential plugins and auth providers, token files, and token refresh through
``Configuration.refresh_api_key_hook`` (called by :meth:`KubeConfig.authorization` on every
request, which is cheap: the hooks only reload once their token has expired).

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
from urllib.parse import urlsplit

from kubernetes.client import Configuration
from kubernetes.config import incluster_config, kube_config
from kubernetes.config.config_exception import ConfigException

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
    """A loaded cluster configuration: the ``kubernetes`` Configuration plus where it came from.

    ``source`` is the kubeconfig path(s), ``"in-cluster"`` or ``"explicit"``; ``context`` is
    the kubeconfig context used (None for in-cluster or explicit configs).
    """

    configuration: Configuration
    source: str = "explicit"
    context: str | None = None
    _auth_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def from_url(cls, host: str, *, token: str | None = None, verify_ssl: bool = True,
                 ca_cert: str | None = None) -> KubeConfig:
        """A config for ``host`` (e.g. ``http://127.0.0.1:8080``) with an optional bearer token."""
        cfg = Configuration(host=host.rstrip("/"))
        cfg.verify_ssl = verify_ssl
        if ca_cert is not None:
            cfg.ssl_ca_cert = ca_cert
        if token is not None:
            cfg.api_key["BearerToken"] = f"Bearer {token}"
        return cls(cfg)

    @property
    def host(self) -> str:
        """The server URL without a trailing slash, e.g. ``https://127.0.0.1:6443``."""
        return str(self.configuration.host).rstrip("/")

    @property
    def netloc(self) -> str:
        """``host:port`` of the server (the ``host`` label of request metrics)."""
        return urlsplit(self.host).netloc

    def authorization(self) -> str | None:
        """The ``Authorization`` header value, refreshed if the token expired, or None.

        Runs ``refresh_api_key_hook`` (exec plugins, rotated service-account tokens) under a
        lock because the ``kubernetes`` loaders mutate shared state while refreshing.
        """
        cfg = self.configuration
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
            cfg = Configuration()
            try:
                loader = incluster_config.InClusterConfigLoader(  # type: ignore[no-untyped-call]
                    token_filename=str(_SA_DIR / "token"), cert_filename=str(_SA_DIR / "ca.crt"),
                )
                loader.load_and_set(cfg)  # type: ignore[no-untyped-call]
            except ConfigException as exc:
                raise ConfigError(f"in-cluster config: {exc}") from exc
            return KubeConfig(cfg, source="in-cluster")
        raise ConfigError(
            "no kubeconfig (argument, $KUBECONFIG or ~/.kube/config) and not running in a pod"
        )
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
