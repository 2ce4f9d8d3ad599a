"""pyctrl: a client-go style Kubernetes controller framework for Python.

This module is the public API: everything a controller author needs is re-exported here
(the test in tests/unit/architecture/test_public_api.py keeps ``__all__`` and the imports in step).
Subpackages (``pyctrl.cache``, ``pyctrl.workqueue``, ``pyctrl.kube``, ``pyctrl.record``,
``pyctrl.leaderelection``, ``pyctrl.errors``) are public too; modules inside them are not.
``pyctrl.testing`` holds fakes, a FakeClock and envtest for tests. The reconcile contract
(Request, Result, Reconciler, FuncReconciler) is :mod:`pyctrl.reconcile`'s.
"""

from pyctrl._version import __version__ as __version__
from pyctrl.api.client import TypedClient
from pyctrl.api.unstructured import Unstructured
from pyctrl.apply import OperationResult, create_or_update
from pyctrl.builder import Builder
from pyctrl.cache import (
    CONTROLLER_UID_INDEX,
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    Indexer,
    Lister,
    ResourceEventHandler,
    ResourceEventHandlerFuncs,
    ResourceEventHandlerRegistration,
    SharedIndexInformer,
    SharedInformerFactory,
    controller_uid_index_func,
    meta_namespace_key,
    split_meta_namespace_key,
)
from pyctrl.clock import Clock, RealClock
from pyctrl.conditions import (
    find_status_condition,
    is_status_condition_true,
    remove_status_condition,
    set_already_owned,
    set_status_condition,
)
from pyctrl.controller import Controller
from pyctrl.errors import (
    AdoptionRefused,
    AlreadyExists,
    ApiError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    NotLeader,
    TerminalError,
    TooManyRequests,
    Undecodable,
)
from pyctrl.finalizers import has_finalizer
from pyctrl.handlers import (
    MapFunc,
    Predicate,
    and_,
    annotations_changed,
    enqueue_object,
    enqueue_owner,
    enqueue_requests,
    generation_changed,
    label_selector_predicate,
    labels_changed,
    not_,
    or_,
    resource_version_changed,
)
from pyctrl.kube import (
    Client,
    FencedClient,
    RESTClient,
    load_config,
)
from pyctrl.kube import resource as _resource
from pyctrl.kube.meta import Object
from pyctrl.kube.resource import *  # noqa: F403
from pyctrl.leaderelection import LeaderCallbacks, LeaderElector, LeaseLock
from pyctrl.log import configure_logging, get_logger
from pyctrl.manager import (
    GCOptions,
    HealthOptions,
    LeaderElectionLost,
    LeaderElectionOptions,
    Manager,
    ManagerOptions,
    MetricsOptions,
    Runnable,
    install_signal_handlers,
)
from pyctrl.ownerrefs import (
    AlreadyOwned,
    controller_of,
    is_controlled_by,
    owner_reference,
    set_controller_reference,
)
from pyctrl.reconcile import (
    FuncReconciler,
    ObjectReconciler,
    Reconciler,
    Request,
    Result,
    stopping,
    with_object,
)
from pyctrl.record import EventBroadcaster, EventRecorder
from pyctrl.retry import DEFAULT_BACKOFF, DEFAULT_RETRY, Backoff, on_error, retry_on_conflict
from pyctrl.sharding import Sharding, ShardingOptions
from pyctrl.workqueue import (
    LOW_PRIORITY,
    NORMAL_PRIORITY,
    DelayingQueue,
    PriorityQueue,
    Queue,
    RateLimiter,
    RateLimitingQueue,
    ShutDown,
    default_controller_rate_limiter,
)

__all__ = [
    "CONTROLLER_UID_INDEX",
    "DEFAULT_BACKOFF",
    "DEFAULT_RETRY",
    "LOW_PRIORITY",
    "NAMESPACE_INDEX",
    "NORMAL_PRIORITY",
    "AdoptionRefused",
    "AlreadyExists",
    "AlreadyOwned",
    "ApiError",
    "Backoff",
    "Builder",
    "Client",
    "Clock",
    "Conflict",
    "Controller",
    "DelayingQueue",
    "DeletedFinalStateUnknown",
    "EventBroadcaster",
    "EventRecorder",
    "FencedClient",
    "Forbidden",
    "FuncReconciler",
    "GCOptions",
    "Gone",
    "HealthOptions",
    "Indexer",
    "Invalid",
    "LeaderCallbacks",
    "LeaderElectionLost",
    "LeaderElectionOptions",
    "LeaderElector",
    "LeaseLock",
    "Lister",
    "Manager",
    "ManagerOptions",
    "MapFunc",
    "MetricsOptions",
    "NotFound",
    "NotLeader",
    "Object",
    "ObjectReconciler",
    "OperationResult",
    "Predicate",
    "PriorityQueue",
    "Queue",
    "RESTClient",
    "RateLimiter",
    "RateLimitingQueue",
    "RealClock",
    "Reconciler",
    "Request",
    "ResourceEventHandler",
    "ResourceEventHandlerFuncs",
    "ResourceEventHandlerRegistration",
    "Result",
    "Runnable",
    "Sharding",
    "ShardingOptions",
    "SharedIndexInformer",
    "SharedInformerFactory",
    "ShutDown",
    "TerminalError",
    "TooManyRequests",
    "TypedClient",
    "Undecodable",
    "Unstructured",
    "and_",
    "annotations_changed",
    "configure_logging",
    "controller_of",
    "controller_uid_index_func",
    "create_or_update",
    "default_controller_rate_limiter",
    "enqueue_object",
    "enqueue_owner",
    "enqueue_requests",
    "find_status_condition",
    "generation_changed",
    "get_logger",
    "has_finalizer",
    "install_signal_handlers",
    "is_controlled_by",
    "is_status_condition_true",
    "label_selector_predicate",
    "labels_changed",
    "load_config",
    "meta_namespace_key",
    "not_",
    "on_error",
    "or_",
    "owner_reference",
    "remove_status_condition",
    "resource_version_changed",
    "retry_on_conflict",
    "set_already_owned",
    "set_controller_reference",
    "set_status_condition",
    "split_meta_namespace_key",
    "stopping",
    "with_object",
]
__all__ += _resource.__all__  # the Resource constants: one table, pyctrl.kube.resource
