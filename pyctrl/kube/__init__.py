"""pyctrl.kube: the only pyctrl package that talks HTTP or imports ``kubernetes``.

It holds config loading (:func:`load_config`: kubeconfig or in-cluster), the raw-dict
:class:`RESTClient` implementing :class:`Client`, its client-side
:class:`TokenBucketRateLimiter`, the leader-scoped :class:`FencedClient`, request metrics,
label/field selector parsing, JSON patch helpers (:mod:`pyctrl.kube.patch`),
API-server-shaped errors for fakes (:mod:`pyctrl.kube.status`) and the :class:`Resource`
constants.
"""

from pyctrl.kube import resource as _resource
from pyctrl.kube.client import RESTClient
from pyctrl.kube.config import ConfigError, KubeConfig, in_cluster, load_config
from pyctrl.kube.fenced import FencedClient, LeaseHolder
from pyctrl.kube.interface import (
    Client,
    PatchType,
    PropagationPolicy,
    RawObject,
    WatchEvent,
    WatchStream,
)
from pyctrl.kube.meta import format_micro_time, format_rfc3339, format_time, parse_micro_time
from pyctrl.kube.options import ListOptions
from pyctrl.kube.ratelimit import TokenBucketRateLimiter
from pyctrl.kube.resource import *  # noqa: F403
from pyctrl.kube.selectors import (
    FieldSelector,
    LabelSelector,
    parse_field_selector,
    parse_label_selector,
)
from pyctrl.kube.watch import HTTPWatchStream, WatchDecoder

__all__ = [
    "Client",
    "ConfigError",
    "FencedClient",
    "FieldSelector",
    "HTTPWatchStream",
    "KubeConfig",
    "LabelSelector",
    "LeaseHolder",
    "ListOptions",
    "PatchType",
    "PropagationPolicy",
    "RESTClient",
    "RawObject",
    "TokenBucketRateLimiter",
    "WatchDecoder",
    "WatchEvent",
    "WatchStream",
    "format_micro_time",
    "format_rfc3339",
    "format_time",
    "in_cluster",
    "load_config",
    "parse_field_selector",
    "parse_label_selector",
    "parse_micro_time",
]
__all__ += _resource.__all__  # the Resource constants: one table, pyctrl.kube.resource
