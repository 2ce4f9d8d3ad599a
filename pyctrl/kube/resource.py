"""Resource: which API endpoint a raw-dict object lives at.

Contract: a :class:`Resource` names a group/version/resource (plural) plus the facts the
client needs to build URLs (namespaced or not) and to fill ``apiVersion``/``kind`` on objects
it sends. It is immutable and hashable, so it can key informer factories and caches.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CONFIGMAPS",
    "CUSTOM_RESOURCE_DEFINITIONS",
    "DEPLOYMENTS",
    "EVENTS",
    "JOBS",
    "LEASES",
    "NAMESPACES",
    "PODS",
    "SECRETS",
    "SERVICE_ACCOUNTS",
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


NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS = Resource("", "v1", "secrets", "Secret")
PODS = Resource("", "v1", "pods", "Pod")
EVENTS = Resource("", "v1", "events", "Event")
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
JOBS = Resource("batch", "v1", "jobs", "Job")
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
CUSTOM_RESOURCE_DEFINITIONS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
    namespaced=False,
)
