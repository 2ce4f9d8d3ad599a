"""envtest: run a real etcd + kube-apiserver (+ kube-controller-manager) for tests.

See :class:`ControlPlane`. Binaries come from KUBEBUILDER_ASSETS or the pyctrl cache, where
``pyctrl envtest install`` builds them from the Go module proxy (a source checkout builds
them on first use); :mod:`pyctrl.testing.envtest.binaries` is the lookup.
Admission webhooks are registered against a local server with
:meth:`ControlPlane.install_webhooks` (:mod:`pyctrl.testing.envtest.webhooks`).
``ControlPlane(pods=True)`` runs Jobs' pods on kwok's fake nodes; :func:`fake_run` writes the
pod metadata that says how long one runs and how it ends (:mod:`pyctrl.testing.envtest.pods`).
"""

from pyctrl.testing.envtest.binaries import Binaries, BinariesNotFound, find_binaries
from pyctrl.testing.envtest.controlplane import (
    DEFAULT_CONTROLLERS,
    ControlPlane,
    ControlPlaneError,
    Unsupported,
)
from pyctrl.testing.envtest.manifests import load_manifests
from pyctrl.testing.envtest.pods import PodMetadata, fake_run
from pyctrl.testing.envtest.webhooks import (
    InstalledWebhooks,
    LocalWebhookServer,
    WebhookInstallError,
    install_webhooks,
    rewrite_conversion_webhook,
    rewrite_webhook_configuration,
)

__all__ = [
    "DEFAULT_CONTROLLERS",
    "Binaries",
    "BinariesNotFound",
    "ControlPlane",
    "ControlPlaneError",
    "InstalledWebhooks",
    "LocalWebhookServer",
    "PodMetadata",
    "Unsupported",
    "WebhookInstallError",
    "fake_run",
    "find_binaries",
    "install_webhooks",
    "load_manifests",
    "rewrite_conversion_webhook",
    "rewrite_webhook_configuration",
]
