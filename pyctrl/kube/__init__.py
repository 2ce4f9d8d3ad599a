"""pyctrl.kube: the only pyctrl package that talks HTTP or imports ``kubernetes``.

It holds config loading (:func:`load_config`: kubeconfig or in-cluster), the raw-dict
:class:`RESTClient` implementing :class:`Client`, its client-side
:class:`TokenBucketRateLimiter`, the leader-scoped :class:`FencedClient`, request metrics,
label/field selector parsing, JSON patch helpers (:mod:`pyctrl.kube.patch`),
API-server-shaped errors for fakes (:mod:`pyctrl.kube.status`) and the :class:`Resource`
constants.
"""

from pyctrl.kube.client import RESTClient
from pyctrl.kube.config import ConfigError, KubeConfig, in_cluster, load_config
from pyctrl.kube.fenced import FencedClient, LeaseHolder
from pyctrl.kube.interface import (
    Client,
    Object,
    PatchType,
    PropagationPolicy,
    WatchEvent,
    WatchStream,
)
from pyctrl.kube.meta import format_micro_time, format_time, parse_micro_time
from pyctrl.kube.options import ListOptions
from pyctrl.kube.ratelimit import TokenBucketRateLimiter
from pyctrl.kube.resource import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    CONFIGMAPS,
    CUSTOM_RESOURCE_DEFINITIONS,
    DAEMON_SETS,
    DEPLOYMENTS,
    ENDPOINT_SLICES,
    ENDPOINTS,
    EVENTS,
    INGRESSES,
    JOBS,
    LEASES,
    NAMESPACES,
    NETWORK_POLICIES,
    NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    PODS,
    REPLICA_SETS,
    ROLE_BINDINGS,
    ROLES,
    SECRETS,
    SERVICE_ACCOUNTS,
    SERVICES,
    STATEFUL_SETS,
    Resource,
)
from pyctrl.kube.selectors import (
    FieldSelector,
    LabelSelector,
    parse_field_selector,
    parse_label_selector,
)
from pyctrl.kube.watch import HTTPWatchStream, WatchDecoder

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
    "Client",
    "ConfigError",
    "FencedClient",
    "FieldSelector",
    "HTTPWatchStream",
    "KubeConfig",
    "LabelSelector",
    "LeaseHolder",
    "ListOptions",
    "Object",
    "PatchType",
    "PropagationPolicy",
    "RESTClient",
    "Resource",
    "TokenBucketRateLimiter",
    "WatchDecoder",
    "WatchEvent",
    "WatchStream",
    "format_micro_time",
    "format_time",
    "in_cluster",
    "load_config",
    "parse_field_selector",
    "parse_label_selector",
    "parse_micro_time",
]
