"""Test helpers that ship with pyctrl: a FakeClock, in-memory fakes, and envtest.

* :class:`FakeClock` -- time that moves only when a test steps it.
* :class:`FakeClient` -- an in-memory API server (object tracker, watches, reactors, actions).
* :class:`FakeListWatch` -- a scriptable ListerWatcher (410s, drops, silence, bookmarks).
* :class:`FakeLock` / :class:`FakeLockStore` -- leader-election locks in memory.
* :class:`FakeRecorder` -- collects events instead of writing them.
* :func:`synced_lister` -- a (typed) lister over a FakeClient's objects, always in sync.
* :mod:`pyctrl.testing.envtest` -- a real etcd + kube-apiserver for integration tests.
"""

from pyctrl.testing.fake_cache import synced_lister
from pyctrl.testing.fake_client import Action, FakeClient, FakeWatch, Reactor, WatchReactor
from pyctrl.testing.fake_clock import FakeClock
from pyctrl.testing.fake_listwatch import FakeListWatch, FakeWatchStream
from pyctrl.testing.fake_lock import FakeLock, FakeLockStore
from pyctrl.testing.fake_recorder import FakeRecorder, RecordedEvent

__all__ = [
    "Action",
    "FakeClient",
    "FakeClock",
    "FakeListWatch",
    "FakeLock",
    "FakeLockStore",
    "FakeRecorder",
    "FakeWatch",
    "FakeWatchStream",
    "Reactor",
    "RecordedEvent",
    "WatchReactor",
    "synced_lister",
]
