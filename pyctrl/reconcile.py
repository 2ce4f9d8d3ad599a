"""The reconcile contract: what a controller hands its reconciler and what it gets back.

Contract (controller-runtime's ``pkg/reconcile``, in threads):

* :class:`Request` names one object: ``namespace`` (``""`` when cluster-scoped) and ``name``.
  It is immutable and hashable (the work queue dedups on it), compares by value, and
  ``str(request)`` is client-go's key ``"ns/name"`` (``"name"`` when cluster-scoped);
  :meth:`Request.from_key` is the inverse and :meth:`Request.from_object` reads an object's
  metadata. Requests flow from the event handler through the queue to the reconciler; no
  string key travels in between.
* :class:`Reconciler`: ``reconcile(request) -> Result | None``. ``None`` and ``Result()`` mean
  done; ``Result(requeue_after=d)`` runs the request again after ``d`` seconds;
  ``Result(requeue=True)`` retries with the queue's backoff; raising retries with backoff,
  except :class:`TerminalError` (logged and counted, never retried). The full outcome table
  is :mod:`pyctrl.controller`'s.
* :class:`TypedReconciler` is the same protocol over another request type (a Controller is
  generic in what its queue holds); :class:`Reconciler` is ``TypedReconciler[Request]``.
* :class:`FuncReconciler` makes a reconciler of a function; :func:`as_reconciler` accepts
  either and returns a :class:`Reconciler` (TypeError for anything else).

A reconciler must be safe to call from several worker threads at once for *different*
requests; the queue never hands one request to two workers at the same time.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import NamedTuple, Protocol, TypeVar, cast

from pyctrl.cache.keys import split_meta_namespace_key
from pyctrl.errors import TerminalError
from pyctrl.kube import meta

__all__ = [
    "FuncReconciler",
    "ReconcileFunc",
    "Reconciler",
    "Request",
    "Result",
    "TerminalError",
    "TypedReconciler",
    "as_reconciler",
]


# A NamedTuple, not a frozen dataclass: the work queue hashes and compares every request on
# every add/get/done, and a tuple's hash and equality run in C (a dataclass's are Python
# functions, several times slower on that hot path).
class Request(NamedTuple):
    """The object a reconcile is about: ``namespace`` ("" if cluster-scoped) and ``name``."""

    namespace: str
    name: str

    @property
    def key(self) -> str:
        """``"namespace/name"``, or ``"name"`` for a cluster-scoped object (= ``str()``)."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @classmethod
    def from_key(cls, key: str) -> Request:
        """The Request for a ``"namespace/name"`` or ``"name"`` key (ValueError otherwise)."""
        namespace, name = split_meta_namespace_key(key)
        return cls(namespace, name)

    @classmethod
    def from_object(cls, obj: meta.AnyObject) -> Request:
        """The Request naming ``obj`` (KeyError when ``metadata.name`` is missing)."""
        name = meta.name(obj)
        if not name:
            raise KeyError("metadata.name")
        return cls(meta.namespace(obj), name)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@dataclass(frozen=True)
class Result:
    """What a reconcile asks for next: nothing, a rate-limited retry, or a run after a delay."""

    requeue: bool = False
    requeue_after: float | None = None


RequestT_contra = TypeVar("RequestT_contra", bound=Hashable, contravariant=True)


class TypedReconciler(Protocol[RequestT_contra]):
    """Brings the world in line with what ``request`` names (any hashable request type)."""

    def reconcile(self, request: RequestT_contra) -> Result | None: ...


class Reconciler(Protocol):
    """Brings the world in line with the object ``request`` names."""

    def reconcile(self, request: Request) -> Result | None: ...


ReconcileFunc = Callable[[Request], "Result | None"]


class FuncReconciler:
    """A :class:`Reconciler` that calls ``fn(request)``."""

    __slots__ = ("fn",)

    def __init__(self, fn: ReconcileFunc) -> None:
        if not callable(fn):
            raise TypeError(f"FuncReconciler needs a function, not {type(fn).__name__}")
        self.fn = fn

    def reconcile(self, request: Request) -> Result | None:
        return self.fn(request)

    def __repr__(self) -> str:
        return f"FuncReconciler({self.fn!r})"


def as_reconciler(reconciler: Reconciler | ReconcileFunc) -> Reconciler:
    """``reconciler`` itself if it has a ``reconcile`` method, a :class:`FuncReconciler` if it
    is a function; TypeError otherwise."""
    if callable(getattr(reconciler, "reconcile", None)):
        return cast(Reconciler, reconciler)
    if callable(reconciler):
        return FuncReconciler(reconciler)
    raise TypeError("a reconciler is an object with reconcile(request) or a function, "
                    f"not {type(reconciler).__name__}")
