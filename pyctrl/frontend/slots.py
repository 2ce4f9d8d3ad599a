"""The open connections of one front end: the caps and whom a new connection displaces.

Contract: a :class:`Slots` lives on the front end's event-loop thread (nothing here locks).
It holds the open connections, counted per client address, and two pools in age order: the
idle kept connections (longest idle first) and the connections reading a request head (the
oldest request first). :meth:`Slots.admit` applies ``max_connections_per_peer``, then
``max_connections``: at a cap it makes room by cutting off the oldest connection of the
head pool (counted in ``evicted``), else by closing the longest idle one (``idle_closed``),
from the same client address for the per-address cap, from any for the global one, and
refuses (``refused``) when both pools are empty; the reasons for that order are in
:mod:`pyctrl.frontend.server`. :meth:`Slots.may_keep` is the per-server part of keep-alive:
fewer than ``max_requests_per_connection`` answers on the connection and fewer connections
open than the keep-alive threshold (``max_connections`` minus an eighth of it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import structlog

from pyctrl.frontend.connection import Conn
from pyctrl.frontend.options import FrontendOptions

__all__ = ["Slots"]

log = structlog.get_logger("pyctrl.frontend.server")  # the front end's lines, one logger

_Pool = dict[Conn, None]  # insertion order: the oldest first


class Slots:
    """The open connections of the front end ``name`` (see module docstring); ``due(what)``
    says whether a line about ``what`` ("refused", "idle", "evicted") may be logged now."""

    def __init__(self, name: str, options: FrontendOptions,
                 due: Callable[[str], bool]) -> None:
        self._name = name
        self._options = options
        self._due = due
        self.accepted = 0  # connections admitted since the start
        self.refused = 0  # connections closed at once because of a cap
        self.idle_closed = 0  # idle kept connections closed for a new one
        self.evicted = 0  # connections without a complete head cut off for a new one
        self.conns: set[Conn] = set()
        self._per_peer: Counter[str] = Counter()
        self._idle: _Pool = {}
        self._idle_per_peer: dict[str, _Pool] = {}
        self._heads: _Pool = {}
        self._heads_per_peer: dict[str, _Pool] = {}
        self._keep_alive_below = options.max_connections - options.max_connections // 8

    def idle_count(self) -> int:
        """Kept connections waiting for their next request."""
        return len(self._idle)

    def head_count(self) -> int:
        """Connections reading a request head."""
        return len(self._heads)

    def admit(self, conn: Conn) -> bool:
        """Whether ``conn`` may be served, after making room at a cap; counts it when so."""
        options, peer = self._options, conn.peer
        if (self._per_peer[peer] >= options.max_connections_per_peer
                and not self._make_room(self._idle_per_peer.get(peer),
                                        self._heads_per_peer.get(peer))):
            reason, limit = "too many connections from one client", \
                options.max_connections_per_peer
        elif (len(self.conns) >= options.max_connections
              and not self._make_room(self._idle, self._heads)):
            reason, limit = "too many connections", options.max_connections
        else:
            self.conns.add(conn)
            self._per_peer[peer] += 1
            self.accepted += 1
            return True
        self.refused += 1
        if self._due("refused"):
            log.warning("connections refused", server=self._name, reason=reason, limit=limit,
                        refused_total=self.refused, client=peer)
        return False

    def release(self, conn: Conn) -> bool:
        """Forget ``conn`` (it closed); False when it was not open."""
        if conn not in self.conns:
            return False
        self.conns.discard(conn)
        self._per_peer[conn.peer] -= 1
        if not self._per_peer[conn.peer]:
            del self._per_peer[conn.peer]
        self.busy(conn)
        self.head_read(conn)
        return True

    def may_keep(self, conn: Conn) -> bool:
        """Whether the caps allow ``conn`` another request (see module docstring)."""
        return (conn.served < self._options.max_requests_per_connection
                and len(self.conns) < self._keep_alive_below)

    def idle(self, conn: Conn) -> None:
        """``conn`` (kept) waits for its next request: the newest idle connection."""
        _push(self._idle, self._idle_per_peer, conn)

    def busy(self, conn: Conn) -> None:
        """``conn`` is no longer idle (a request started, or it closed)."""
        _pop(self._idle, self._idle_per_peer, conn)

    def reading_head(self, conn: Conn) -> None:
        """A request started on ``conn``: the newest connection without a complete head."""
        _push(self._heads, self._heads_per_peer, conn)

    def head_read(self, conn: Conn) -> None:
        """``conn``'s request head is complete (or it closed)."""
        _pop(self._heads, self._heads_per_peer, conn)

    def _make_room(self, idle: _Pool | None, heads: _Pool | None) -> bool:
        """Free a slot now: cut off the oldest of ``heads``, else close the longest idle
        connection of ``idle``; False when both are empty."""
        if heads:
            what, conn = "evicted", next(iter(heads))
            self.evicted += 1
        elif idle:
            what, conn = "idle", next(iter(idle))
            self.idle_closed += 1
        else:
            return False
        self.release(conn)
        conn.close(abort=what == "evicted")
        if self._due(what):
            if what == "idle":
                log.info("closed idle keep-alive connections for new ones", server=self._name,
                         client=conn.peer, idle_closed_total=self.idle_closed)
            else:
                log.info("cut off connections without a complete request head for new ones",
                         server=self._name, client=conn.peer, evicted_total=self.evicted)
        return True


def _push(pool: _Pool, per_peer: dict[str, _Pool], conn: Conn) -> None:
    pool[conn] = None
    per_peer.setdefault(conn.peer, {})[conn] = None


def _pop(pool: _Pool, per_peer: dict[str, _Pool], conn: Conn) -> None:
    if conn not in pool:
        return
    del pool[conn]
    peers = per_peer[conn.peer]
    del peers[conn]
    if not peers:
        del per_peer[conn.peer]
