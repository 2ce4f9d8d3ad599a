"""TLS for one server-side connection over two memory BIOs, so the event loop never blocks.

Contract: a :class:`TLSSession` wraps an ``ssl.SSLObject`` made from ``context`` with an
incoming and an outgoing ``MemoryBIO``. The connection :meth:`~TLSSession.feed` s it the
bytes the socket gave, drives :meth:`~TLSSession.handshake` until it returns True, then
:meth:`~TLSSession.read` s plaintext and :meth:`~TLSSession.write` s its answer; whatever
TLS has to send (handshake records, alerts, ciphertext) waits in :meth:`~TLSSession.outgoing`
until the connection writes it to the socket. ``ssl.SSLError`` and ``ValueError`` (a failed
handshake, a bad record) reach the caller.
"""

from __future__ import annotations

import ssl

__all__ = ["TLSSession"]

_READ = 64 * 1024


class TLSSession:
    """One connection's TLS (see module docstring)."""

    def __init__(self, context: ssl.SSLContext) -> None:
        self._incoming, self._outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._incoming, self._outgoing, server_side=True)
        self.handshaken = False

    def feed(self, data: bytes) -> None:
        """Ciphertext from the socket."""
        self._incoming.write(data)

    def handshake(self) -> bool:
        """Advance the handshake; True once it is done."""
        try:
            self._tls.do_handshake()
        except ssl.SSLWantReadError:
            return False
        self.handshaken = True
        return True

    def read(self) -> bytes | None:
        """Plaintext decrypted so far (up to 64 KiB), None when more ciphertext is needed,
        ``b""`` when the client sent close_notify."""
        try:
            return self._tls.read(_READ)
        except ssl.SSLWantReadError:
            return None

    def write(self, data: bytes) -> None:
        """Encrypt ``data`` into :meth:`outgoing`."""
        view = memoryview(data)
        while view:
            view = view[self._tls.write(view):]

    def outgoing(self) -> bytes:
        """What TLS has to send now (``b""``: nothing)."""
        return self._outgoing.read() if self._outgoing.pending else b""

    def pending(self) -> bool:
        """Whether received bytes wait to be decrypted."""
        return bool(self._tls.pending() or self._incoming.pending)
