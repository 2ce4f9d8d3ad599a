"""envtest: run a real etcd + kube-apiserver (+ kube-controller-manager) for tests.

See :class:`ControlPlane`. Binaries come from KUBEBUILDER_ASSETS, the pyctrl cache, or are
built from the Go module proxy by hack/controlplane/build.sh in a source checkout.
"""

from pyctrl.testing.envtest.binaries import Binaries, BinariesNotFound, find_binaries
from pyctrl.testing.envtest.controlplane import (
    DEFAULT_CONTROLLERS,
    ControlPlane,
    ControlPlaneError,
    Unsupported,
    load_manifests,
)

__all__ = [
    "DEFAULT_CONTROLLERS",
    "Binaries",
    "BinariesNotFound",
    "ControlPlane",
    "ControlPlaneError",
    "Unsupported",
    "find_binaries",
    "load_manifests",
]
