"""Resource: which API endpoint a raw-dict object lives at.

Contract: a :class:`Resource` names a group/version/resource (plural) plus the facts the
client needs to build URLs (namespaced or not) and to fill ``apiVersion``/``kind`` on objects
it sends. It is immutable and hashable, so it can key informer factories and caches.

The constants of the built-in kinds (``JOBS``, ``PODS``, ...) are defined here and only here,
in one table; ``pyctrl.kube`` and ``pyctrl`` re-export this module's ``__all__`` as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CLUSTER_ROLES",
    "CLUSTER_ROLE_BINDINGS",
    "CONFIGMAPS",
    "CUSTOM_RESOURCE_DEFINITIONS",
    "DAEMON_SETS",
    "DEPLOYMENTS",
    "ENDPOINTS",
    "ENDPOINT_SLICES",
    "EVENTS",
    "INGRESSES",
    "JOBS",
    "LEASES",
    "NAMESPACES",
    "NETWORK_POLICIES",
    "NODES",
    "PERSISTENT_VOLUMES",
    "PERSISTENT_VOLUME_CLAIMS",
    "PODS",
    "REPLICA_SETS",
    "ROLES",
    "ROLE_BINDINGS",
    "SECRETS",
    "SERVICES",
    "SERVICE_ACCOUNTS",
    "STATEFUL_SETS",
    "SUBJECT_ACCESS_REVIEWS",
    "TOKEN_REVIEWS",
    "Resource",
]


@dataclass(frozen=True, slots=True)
class Resource:
    """An API resource: ``group`` ("" for core), ``version``, ``plural``, ``kind``."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        """``group/version``, or just ``version`` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def base_path(self) -> str:
        """``/api/v1`` or ``/apis/<group>/<version>``."""
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(self, namespace: str | None = None, name: str | None = None,
             subresource: str | None = None) -> str:
        """The URL path for a collection (no name) or one object (with name)."""
        parts = [self.base_path]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{namespace}")
        parts.append(self.plural)
        if name is not None:
            parts.append(name)
            if subresource:
                parts.append(subresource)
        return "/".join(parts)

    def __str__(self) -> str:
        return f"{self.plural}.{self.version}.{self.group}" if self.group else (
            f"{self.plural}.{self.version}"
        )


# Common built-in kinds (the names are the plurals; multi-word kinds split at word
# boundaries, as SERVICE_ACCOUNTS always did).
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS = Resource("", "v1", "secrets", "Secret")
PODS = Resource("", "v1", "pods", "Pod")
SERVICES = Resource("", "v1", "services", "Service")
ENDPOINTS = Resource("", "v1", "endpoints", "Endpoints")
EVENTS = Resource("", "v1", "events", "Event")
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
PERSISTENT_VOLUMES = Resource("", "v1", "persistentvolumes", "PersistentVolume",
                              namespaced=False)
PERSISTENT_VOLUME_CLAIMS = Resource("", "v1", "persistentvolumeclaims",
                                    "PersistentVolumeClaim")
JOBS = Resource("batch", "v1", "jobs", "Job")
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
REPLICA_SETS = Resource("apps", "v1", "replicasets", "ReplicaSet")
STATEFUL_SETS = Resource("apps", "v1", "statefulsets", "StatefulSet")
DAEMON_SETS = Resource("apps", "v1", "daemonsets", "DaemonSet")
INGRESSES = Resource("networking.k8s.io", "v1", "ingresses", "Ingress")
NETWORK_POLICIES = Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy")
ENDPOINT_SLICES = Resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice")
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
CLUSTER_ROLES = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole",
                         namespaced=False)
CLUSTER_ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings",
                                 "ClusterRoleBinding", namespaced=False)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
CUSTOM_RESOURCE_DEFINITIONS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
    namespaced=False,
)
TOKEN_REVIEWS = Resource("authentication.k8s.io", "v1", "tokenreviews", "TokenReview",
                         namespaced=False)
SUBJECT_ACCESS_REVIEWS = Resource("authorization.k8s.io", "v1", "subjectaccessreviews",
                                  "SubjectAccessReview", namespaced=False)
