"""FakeLock: an in-memory :class:`pyctrl.leaderelection.ResourceLock` for unit tests.

Contract: several FakeLocks built over one :class:`FakeLockStore` contend for the same record
with the real lock's semantics: ``get`` raises NotFound before the first ``create``;
``create`` raises AlreadyExists when a record exists; ``update`` raises Conflict when the
record changed since this lock last read or wrote it. Tests inject failures with
``store.fail_with`` (every call raises that error until cleared) and can block calls with
``store.block()``/``store.unblock()`` to model a hung API server. Every successful write is
appended to ``store.history`` so tests can assert on transitions.
"""

from __future__ import annotations

import threading

from pyctrl.errors import AlreadyExists, ApiError, Conflict, NotFound
from pyctrl.leaderelection.lock import LeaderElectionRecord

__all__ = ["FakeLock", "FakeLockStore"]


class FakeLockStore:
    """The shared "server" side of one or more FakeLocks."""

    def __init__(self) -> None:
        self._mu = threading.Lock()
        self.record: LeaderElectionRecord | None = None
        self.version = 0
        self.history: list[LeaderElectionRecord] = []
        self.fail_with: ApiError | None = None
        self._open = threading.Event()
        self._open.set()
        self.calls = 0

    def block(self) -> None:
        """Make every call hang until :meth:`unblock` (a server that stopped answering)."""
        self._open.clear()

    def unblock(self) -> None:
        self._open.set()

    def holder(self) -> str:
        with self._mu:
            return self.record.holder_identity if self.record else ""

    def _enter(self) -> None:
        self._open.wait()
        with self._mu:
            self.calls += 1
            err = self.fail_with
        if err is not None:
            raise err


class FakeLock:
    """One candidate's view of a :class:`FakeLockStore`."""

    def __init__(self, store: FakeLockStore, identity: str, name: str = "fake/lock") -> None:
        self.store = store
        self._identity = identity
        self._name = name
        self._seen_version = -1

    def get(self) -> LeaderElectionRecord:
        self.store._enter()
        with self.store._mu:
            if self.store.record is None:
                raise NotFound(f"lease {self._name} not found", 404, "NotFound")
            self._seen_version = self.store.version
            return self.store.record

    def create(self, record: LeaderElectionRecord) -> None:
        self.store._enter()
        with self.store._mu:
            if self.store.record is not None:
                raise AlreadyExists(f"lease {self._name} exists", 409, "AlreadyExists")
            self._write(record)

    def update(self, record: LeaderElectionRecord) -> None:
        self.store._enter()
        with self.store._mu:
            if self.store.record is None:
                raise NotFound(f"lease {self._name} not found", 404, "NotFound")
            if self._seen_version != self.store.version:
                raise Conflict(f"lease {self._name} was modified", 409, "Conflict")
            self._write(record)

    def _write(self, record: LeaderElectionRecord) -> None:
        self.store.record = record
        self.store.version += 1
        self.store.history.append(record)
        self._seen_version = self.store.version

    def identity(self) -> str:
        return self._identity

    def describe(self) -> str:
        return self._name
