"""Writing kubeconfig files for envtest's admin user (and other identities).

Contract: :func:`write_kubeconfig` writes a single-cluster, single-user, single-context
kubeconfig with embedded (base64) certificate data, so the file stays valid after the
certificate files it was made from are gone.
"""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

__all__ = ["write_kubeconfig"]


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write_kubeconfig(
    path: Path,
    *,
    server: str,
    ca_cert: Path,
    client_cert: Path | None = None,
    client_key: Path | None = None,
    token: str | None = None,
    user: str = "admin",
    cluster: str = "envtest",
) -> Path:
    """Write a kubeconfig for ``server`` authenticating with a client cert or a token."""
    user_entry: dict[str, str] = {}
    if client_cert is not None and client_key is not None:
        user_entry["client-certificate-data"] = _b64(client_cert)
        user_entry["client-key-data"] = _b64(client_key)
    if token is not None:
        user_entry["token"] = token
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": cluster, "cluster": {"server": server,
                                          "certificate-authority-data": _b64(ca_cert)}}
        ],
        "users": [{"name": user, "user": user_entry}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": user}}],
        "current-context": cluster,
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path
