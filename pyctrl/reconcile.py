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
* Coroutines are refused where a reconciler is registered (``as_reconciler``, the
  Controller): an ``async def reconcile`` raises TypeError there, never an InvalidResult per
  reconcile later. Workers are threads: write ``def reconcile``.
* :func:`with_object` (controller-runtime's ``AsReconciler``) makes a :class:`Reconciler` of
  an :class:`ObjectReconciler`, ``reconcile(request, obj)``: the object is read from a reader
  (the Builder's ``lister_for(Kind)``: the cache, typed) before each call; an object the
  reader does not find (deleted and gone) is not reconciled (None).
* :func:`stopping` is the stop Event of the controller running the current reconcile (set
  when the manager shuts down); outside a worker it is an Event that is never set. A long
  reconcile checks ``stopping().is_set()`` between steps, or waits with
  ``stopping().wait(seconds)`` instead of sleeping, and returns (a ``Result(requeue=True)``
  if its work is unfinished: the next leader picks it up) instead of being abandoned.

A reconciler must be safe to call from several worker threads at once for *different*
requests; the queue never hands one request to two workers at the same time.
"""

from __future__ import annotations

import contextvars
import inspect
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, TypeVar, cast

from pyctrl.cache.keys import split_meta_namespace_key
from pyctrl.errors import NotFound, TerminalError
from pyctrl.kube import meta

__all__ = [
    "FuncReconciler",
    "ObjectReader",
    "ObjectReconciler",
    "ReconcileFunc",
    "Reconciler",
    "Request",
    "Result",
    "TerminalError",
    "TypedReconciler",
    "as_reconciler",
    "refuse_coroutine",
    "stopping",
    "with_object",
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
        """The Request naming ``obj``, a raw dict or a typed object (KeyError when
        ``metadata.name`` is missing)."""
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


T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)
T_co = TypeVar("T_co", covariant=True)


class ObjectReconciler(Protocol[T_contra]):
    """Reconciles the object ``request`` names, handed in as read from the cache."""

    def reconcile(self, request: Request, obj: T_contra) -> Result | None: ...


class ObjectReader(Protocol[T_co]):
    """Where :func:`with_object` reads objects: a lister (``get(namespace, name)``, raising
    :class:`~pyctrl.errors.NotFound`)."""

    def get(self, namespace: str | None, name: str) -> T_co: ...


class _WithObject:
    __slots__ = ("inner", "reader")

    def __init__(self, reader: ObjectReader[Any], inner: ObjectReconciler[Any]) -> None:
        self.reader = reader
        self.inner = inner

    def reconcile(self, request: Request) -> Result | None:
        try:
            obj = self.reader.get(request.namespace or None, request.name)
        except NotFound:
            return None  # deleted and gone: nothing left to reconcile
        return self.inner.reconcile(request, obj)

    def __repr__(self) -> str:
        return f"with_object({self.inner!r})"


def with_object(reader: ObjectReader[T], reconciler: ObjectReconciler[T]) -> Reconciler:
    """A Reconciler that reads the object from ``reader`` and calls
    ``reconciler.reconcile(request, obj)`` (module docstring)."""
    refuse_coroutine(reconciler.reconcile)
    return _WithObject(reader, reconciler)


_STOP: contextvars.ContextVar[threading.Event] = contextvars.ContextVar("pyctrl_stop")
_NEVER = threading.Event()


def stopping() -> threading.Event:
    """The current controller's stop Event (module docstring); never set outside a worker."""
    return _STOP.get(_NEVER)


def refuse_coroutine(fn: object) -> None:
    """TypeError when ``fn`` is an ``async def`` (module docstring)."""
    call = None if inspect.isroutine(fn) else type(fn).__dict__.get("__call__")
    if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call):
        raise TypeError(
            f"{getattr(fn, '__qualname__', fn)!r} is a coroutine function: pyctrl runs "
            "reconcilers on worker threads, so declare it with def, not async def (for "
            "concurrency, raise the controller's workers)")


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
    method = getattr(reconciler, "reconcile", None)
    if callable(method):
        refuse_coroutine(method)
        return cast(Reconciler, reconciler)
    if callable(reconciler):
        refuse_coroutine(reconciler)
        return FuncReconciler(reconciler)
    raise TypeError("a reconciler is an object with reconcile(request) or a function, "
                    f"not {type(reconciler).__name__}")
