"""The LIST half of a Reflector's sync: one whole list of a resource, page by page.

Contract of :func:`list_all` (called by :class:`pyctrl.cache.reflector.Reflector` for every
LIST; it returns the listed objects and the list's resourceVersion):

* Paged (``limit=page_size``; ``page_size <= 0``: unpaged) only at resourceVersion ``"0"`` or
  ``""``: as client-go, a list at a specific version is asked unpaged, served from the watch
  cache ("not older than"), since a paged list at a version means "exactly this version" from
  etcd, which can hand back the very state a 410 told the reflector to move past.
* Pages come from the lister's ``list_pages`` generator when it has one (the
  :class:`~pyctrl.cache.listwatch.ListWatch` over a RESTClient requests page N+1 while page N
  is decoded and transformed), else from ``list`` one call per page
  (:func:`~pyctrl.cache.listwatch.sequential_pages`). The generator is closed (its prefetch
  thread joined) when the list ends, fails or is stopped.
* A 410 (:func:`is_expired`) while following ``continue`` tokens restarts the list as one
  consistent, unpaged read (resourceVersion ``""``): pages of different snapshots can't mix.
  Any other error, and a 410 on the first page, propagates.
* ``transform`` (optional) is applied to every object page by page, so the dropped parts of
  one page are freed before the next page is decoded. ``stream_to`` (optional: a DeltaFIFO's
  ``stream_initial``) gets each transformed page as soon as it is ready, until it declines one;
  the returned list holds every object either way.
* Python's cyclic garbage collector is paused (:func:`pyctrl.kube.body.gc_paused`) while a
  page is transformed and handed over: a list allocates many long-lived objects and no
  cycles, and collections in between only walk them again.
* ``stop`` is checked before each page: once set, :class:`Stopped` is raised.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Generator

import structlog

from pyctrl.cache.listwatch import ListerWatcher, sequential_pages
from pyctrl.errors import ApiError, Gone
from pyctrl.kube.body import gc_paused
from pyctrl.kube.interface import RawObject

__all__ = ["Stopped", "is_expired", "list_all"]

log = structlog.get_logger(__name__)


class Stopped(Exception):
    """``stop`` was set: the reflector unwinds out of its list or watch."""


def is_expired(err: BaseException) -> bool:
    """Whether ``err`` says the resourceVersion asked for was compacted (410 Gone, or an
    error with "too old resource version")."""
    if isinstance(err, Gone):
        return True
    return isinstance(err, ApiError) and "too old resource version" in err.message


def list_all(lw: ListerWatcher, resource_version: str, *, page_size: int,
             transform: Callable[[RawObject], RawObject] | None,
             stream_to: Callable[[list[RawObject]], bool] | None,
             stop: threading.Event, name: str = "") -> tuple[list[RawObject], str]:
    """Every object of the list at ``resource_version``, and the list's resourceVersion
    (module docstring). ``name`` names the reflector in log lines."""
    rv = resource_version
    items: list[RawObject] = []
    limit = page_size if page_size > 0 and rv in ("", "0") else None
    list_pages = getattr(lw, "list_pages", None)
    if stop.is_set():
        raise Stopped
    pages: Generator[RawObject, None, None] = (
        list_pages(limit=limit, resource_version=rv) if list_pages is not None
        else sequential_pages(lw, limit=limit, resource_version=rv))
    stream = stream_to
    continued = False
    with contextlib.closing(pages):
        while True:
            if stop.is_set():
                raise Stopped
            try:
                page = next(pages)
            except Exception as err:
                if not continued or not is_expired(err):
                    raise
                return _unpaged(lw, transform, name)
            with gc_paused():  # collections would only walk the new, cycle-free items
                page_items = page.get("items") or []
                if transform is not None:
                    # Per page, so the dropped parts of one page are freed (and their
                    # memory reused by the next page) before the next page is decoded.
                    page_items = [transform(o) for o in page_items]
                items.extend(page_items)
                if stream is not None and not stream(page_items):
                    stream = None
                del page_items
            md = page.get("metadata") or {}
            del page
            if not md.get("continue"):
                return items, md.get("resourceVersion", "")
            continued = True


def _unpaged(lw: ListerWatcher, transform: Callable[[RawObject], RawObject] | None,
             name: str) -> tuple[list[RawObject], str]:
    log.info("list continue expired, restarting unpaged", reflector=name)
    page = lw.list(limit=None, continue_=None, resource_version="")
    md = page.get("metadata") or {}
    full = page.get("items") or []
    if transform is not None:
        full = [transform(o) for o in full]
    return list(full), md.get("resourceVersion", "")
