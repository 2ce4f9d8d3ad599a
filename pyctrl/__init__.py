"""pyctrl: a client-go style Kubernetes controller framework for Python.

This module is the public API: everything a controller author needs is re-exported here
(the test in tests/unit/test_public_api.py keeps ``__all__`` and the imports in step).
Subpackages (``pyctrl.cache``, ``pyctrl.workqueue``, ``pyctrl.kube``, ``pyctrl.record``,
``pyctrl.leaderelection``, ``pyctrl.errors``) are public too; modules inside them are not.
``pyctrl.testing`` holds fakes, a FakeClock and envtest for tests.
"""

from pyctrl.apply import OperationResult, apply, create_or_update
from pyctrl.builder import Builder, MapFunc, Request, RequestReconciler
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
    set_status_condition,
)
from pyctrl.controller import Controller, Reconciler, Result
from pyctrl.errors import (
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
)
from pyctrl.finalizers import add_finalizer, has_finalizer, remove_finalizer
from pyctrl.handlers import (
    Predicate,
    enqueue_object,
    enqueue_owner,
    generation_changed,
    label_selector_predicate,
    resource_version_changed,
)
from pyctrl.kube import (
    CONFIGMAPS,
    DEPLOYMENTS,
    EVENTS,
    JOBS,
    NAMESPACES,
    PODS,
    SECRETS,
    Client,
    FencedClient,
    Object,
    Resource,
    RESTClient,
    load_config,
)
from pyctrl.leaderelection import LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock
from pyctrl.log import configure_logging
from pyctrl.manager import LeaderElectionLost, Manager, Runnable, install_signal_handlers
from pyctrl.ownerrefs import (
    AlreadyOwnedError,
    controller_of,
    is_controlled_by,
    owner_reference,
    set_controller_reference,
)
from pyctrl.record import EventBroadcaster, EventRecorder
from pyctrl.retry import DEFAULT_BACKOFF, DEFAULT_RETRY, Backoff, on_error, retry_on_conflict
from pyctrl.sharding import ShardingOptions
from pyctrl.workqueue import (
    DelayingQueue,
    Queue,
    RateLimiter,
    RateLimitingQueue,
    ShutDown,
    default_controller_rate_limiter,
)

__all__ = [
    "CONFIGMAPS",
    "CONTROLLER_UID_INDEX",
    "DEFAULT_BACKOFF",
    "DEFAULT_RETRY",
    "DEPLOYMENTS",
    "EVENTS",
    "JOBS",
    "NAMESPACES",
    "NAMESPACE_INDEX",
    "PODS",
    "SECRETS",
    "AlreadyExists",
    "AlreadyOwnedError",
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
    "Gone",
    "Indexer",
    "Invalid",
    "LeaderCallbacks",
    "LeaderElectionConfig",
    "LeaderElectionLost",
    "LeaderElector",
    "LeaseLock",
    "Lister",
    "Manager",
    "MapFunc",
    "NotFound",
    "NotLeader",
    "Object",
    "OperationResult",
    "Predicate",
    "Queue",
    "RESTClient",
    "RateLimiter",
    "RateLimitingQueue",
    "RealClock",
    "Reconciler",
    "Request",
    "RequestReconciler",
    "Resource",
    "ResourceEventHandler",
    "ResourceEventHandlerFuncs",
    "ResourceEventHandlerRegistration",
    "Result",
    "Runnable",
    "ShardingOptions",
    "SharedIndexInformer",
    "SharedInformerFactory",
    "ShutDown",
    "TerminalError",
    "TooManyRequests",
    "add_finalizer",
    "apply",
    "configure_logging",
    "controller_of",
    "controller_uid_index_func",
    "create_or_update",
    "default_controller_rate_limiter",
    "enqueue_object",
    "enqueue_owner",
    "find_status_condition",
    "generation_changed",
    "has_finalizer",
    "install_signal_handlers",
    "is_controlled_by",
    "is_status_condition_true",
    "label_selector_predicate",
    "load_config",
    "meta_namespace_key",
    "on_error",
    "owner_reference",
    "remove_finalizer",
    "remove_status_condition",
    "resource_version_changed",
    "retry_on_conflict",
    "set_controller_reference",
    "set_status_condition",
    "split_meta_namespace_key",
]
