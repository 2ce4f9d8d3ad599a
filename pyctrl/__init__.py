"""pyctrl: a client-go style Kubernetes controller framework for Python.

This module is the public API: everything a controller author needs is re-exported here
(the test in tests/unit/test_public_api.py keeps ``__all__`` and the imports in step).
Subpackages (``pyctrl.cache``, ``pyctrl.workqueue``, ``pyctrl.kube``, ``pyctrl.record``,
``pyctrl.leaderelection``, ``pyctrl.errors``) are public too; modules inside them are not.
``pyctrl.testing`` holds fakes, a FakeClock and envtest for tests.
"""

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
from pyctrl.handlers import (
    enqueue_object,
    enqueue_owner,
    generation_changed,
    label_selector_predicate,
    resource_version_changed,
)
from pyctrl.kube import Client, FencedClient, Resource, RESTClient, load_config
from pyctrl.leaderelection import LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock
from pyctrl.log import configure_logging
from pyctrl.manager import LeaderElectionLost, Manager, Runnable, install_signal_handlers
from pyctrl.record import EventBroadcaster, EventRecorder
from pyctrl.retry import DEFAULT_BACKOFF, DEFAULT_RETRY, Backoff, on_error, retry_on_conflict
from pyctrl.workqueue import (
    DelayingQueue,
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
    "NAMESPACE_INDEX",
    "AlreadyExists",
    "ApiError",
    "Backoff",
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
    "NotFound",
    "NotLeader",
    "Queue",
    "RESTClient",
    "RateLimiter",
    "RateLimitingQueue",
    "RealClock",
    "Reconciler",
    "Resource",
    "ResourceEventHandler",
    "ResourceEventHandlerFuncs",
    "ResourceEventHandlerRegistration",
    "Result",
    "Runnable",
    "SharedIndexInformer",
    "SharedInformerFactory",
    "ShutDown",
    "TerminalError",
    "TooManyRequests",
    "configure_logging",
    "controller_uid_index_func",
    "default_controller_rate_limiter",
    "enqueue_object",
    "enqueue_owner",
    "generation_changed",
    "install_signal_handlers",
    "label_selector_predicate",
    "load_config",
    "meta_namespace_key",
    "on_error",
    "resource_version_changed",
    "retry_on_conflict",
    "split_meta_namespace_key",
]
