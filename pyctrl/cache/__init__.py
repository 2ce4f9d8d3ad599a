"""pyctrl.cache: client-go's tools/cache in Python (informers, listers, indexers).

Objects handed out by anything in this package (stores, listers, handler callbacks) are the
cache's shared instances: treat them as read-only and deep-copy before changing them. A typed
informer's (``SharedInformerFactory.informer_for(KindClass)``, :mod:`pyctrl.cache.typed`) are
frozen ``pyctrl.api`` objects: change a copy made with ``pyctrl.api.replace``.
"""

from pyctrl.cache.backoff import ExponentialBackoffManager
from pyctrl.cache.delta_fifo import (
    ADDED,
    DELETED,
    REPLACED,
    SYNC,
    UPDATED,
    Delta,
    DeltaFIFO,
    DeltaType,
    FIFOClosedError,
)
from pyctrl.cache.factory import SharedInformerFactory
from pyctrl.cache.index import (
    CONTROLLER_UID_INDEX,
    NAMESPACE_INDEX,
    Indexers,
    IndexFunc,
    controller_uid_index_func,
    meta_namespace_index_func,
)
from pyctrl.cache.informer import SharedIndexInformer
from pyctrl.cache.keys import (
    DeletedFinalStateUnknown,
    deletion_handling_meta_namespace_key,
    meta_namespace_key,
    split_meta_namespace_key,
)
from pyctrl.cache.lister import IndexerLister, Lister, MultiNamespaceLister
from pyctrl.cache.listwatch import ListerWatcher, ListWatch
from pyctrl.cache.mutation import CacheMutationDetector, CacheMutationError, drop_managed_fields
from pyctrl.cache.ownwrites import OwnWrites, RecordingClient
from pyctrl.cache.processor import (
    ResourceEventHandler,
    ResourceEventHandlerDetailedFuncs,
    ResourceEventHandlerFuncs,
    ResourceEventHandlerRegistration,
)
from pyctrl.cache.quarantine import Quarantined, is_quarantined
from pyctrl.cache.reflector import Reflector
from pyctrl.cache.store import Indexer, Store

# The one label-selector parser lives in pyctrl.kube.selectors; these are its cache names.
from pyctrl.kube.selectors import LabelSelector as Selector
from pyctrl.kube.selectors import parse_label_selector as parse_selector

__all__ = [
    "ADDED",
    "CONTROLLER_UID_INDEX",
    "DELETED",
    "NAMESPACE_INDEX",
    "REPLACED",
    "SYNC",
    "UPDATED",
    "CacheMutationDetector",
    "CacheMutationError",
    "DeletedFinalStateUnknown",
    "Delta",
    "DeltaFIFO",
    "DeltaType",
    "ExponentialBackoffManager",
    "FIFOClosedError",
    "IndexFunc",
    "Indexer",
    "IndexerLister",
    "Indexers",
    "ListWatch",
    "Lister",
    "ListerWatcher",
    "MultiNamespaceLister",
    "OwnWrites",
    "Quarantined",
    "RecordingClient",
    "Reflector",
    "ResourceEventHandler",
    "ResourceEventHandlerDetailedFuncs",
    "ResourceEventHandlerFuncs",
    "ResourceEventHandlerRegistration",
    "Selector",
    "SharedIndexInformer",
    "SharedInformerFactory",
    "Store",
    "controller_uid_index_func",
    "deletion_handling_meta_namespace_key",
    "drop_managed_fields",
    "is_quarantined",
    "meta_namespace_index_func",
    "meta_namespace_key",
    "parse_selector",
    "split_meta_namespace_key",
]
