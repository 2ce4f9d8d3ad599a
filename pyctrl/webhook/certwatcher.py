"""Serving certificate from a directory, reloaded when the files change (certwatcher).

Contract (controller-runtime's certwatcher, polling instead of fsnotify):

* :meth:`CertWatcher.load` reads the certificate and key once and raises
  :class:`CertificateError` naming the path when the directory or a file is missing or
  unreadable, or when the key does not belong to the certificate. Call it at start-up so a
  misconfiguration ends the process with a clear message instead of a dead thread.
* :meth:`CertWatcher.run` polls every ``interval`` seconds of the injected Clock until
  ``stop`` is set; :meth:`poll` is one check. A change is detected by content, reading both
  files through their paths: an in-place rewrite, a rename over the file, and the symlink
  swap of a Kubernetes secret volume (``tls.crt -> ..data/tls.crt``, ``..data`` re-pointed
  to a new timestamped directory) all count, and inode reuse or coarse mtimes can not hide
  one. The files are a few KiB, so reading them every second costs nothing.
* A changed pair is loaded into a new ``ssl.SSLContext``; :meth:`context` returns the newest
  valid one, so every TLS handshake after a reload presents the new certificate while
  connections already open keep theirs. A pair that fails to load (half written: the new
  certificate beside the old key) is logged and ignored, and the previous context stays in
  use until the files change again into a valid pair.
"""

from __future__ import annotations

import os
import ssl
import threading
from pathlib import Path

import structlog

from pyctrl.clock import Clock, RealClock

__all__ = ["CertWatcher", "CertificateError"]

log = structlog.get_logger(__name__)


class CertificateError(ValueError):
    """The serving certificate can not be used; the message names the path and the problem."""


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as err:
        raise CertificateError(f"cannot read {path}: {err.strerror or err}") from err


class CertWatcher:
    """The current TLS server context for ``cert_file``/``key_file`` (see module docstring)."""

    def __init__(self, cert_file: str | os.PathLike[str], key_file: str | os.PathLike[str], *,
                 clock: Clock | None = None, interval: float = 1.0) -> None:
        if interval <= 0:
            raise ValueError("interval must be positive")
        self.cert_file = Path(cert_file)
        self.key_file = Path(key_file)
        self.interval = interval
        self._clock = clock or RealClock()
        self._lock = threading.Lock()
        self._context: ssl.SSLContext | None = None
        self._seen: tuple[bytes, bytes] | None = None
        self._unreadable: str | None = None  # the last read error logged
        self.reloads = 0  # successful loads after the first (for tests and logs)

    @property
    def loaded(self) -> bool:
        """Whether a valid certificate has been loaded."""
        with self._lock:
            return self._context is not None

    def context(self) -> ssl.SSLContext:
        """The newest valid server context; RuntimeError before the first successful load."""
        with self._lock:
            if self._context is None:
                raise RuntimeError("no certificate loaded; call load() first")
            return self._context

    def _read_pair(self) -> tuple[bytes, bytes]:
        directory = self.cert_file.parent
        if not directory.is_dir():
            raise CertificateError(
                f"certificate directory {directory} does not exist or is not a directory")
        return _read(self.cert_file), _read(self.key_file)

    def _build(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(self.cert_file, self.key_file)
        except (ssl.SSLError, OSError) as err:
            raise CertificateError(
                f"{self.cert_file} and {self.key_file} are not a usable certificate and key: "
                f"{err}") from err
        return context

    def load(self) -> None:
        """Load the pair now; raise :class:`CertificateError` (naming the path) on failure."""
        content = self._read_pair()
        context = self._build()
        with self._lock:
            first = self._context is None
            self._context, self._seen = context, content
            if not first:
                self.reloads += 1

    def poll(self) -> bool:
        """Reload if the files changed into a valid pair; True when a new context is in use.

        Never raises: a missing, unreadable or mismatched pair is logged and the current
        context stays.
        """
        try:
            content = self._read_pair()
        except CertificateError as err:
            if str(err) != self._unreadable:  # once per problem, not every poll
                self._unreadable = str(err)
                log.warning("webhook certificate unreadable; keeping the current one",
                            error=str(err))
            return False
        self._unreadable = None
        with self._lock:
            if content == self._seen:
                return False
            # Remember what we tried, so a broken pair is reported once, not every poll;
            # any further write changes the content and is tried again.
            self._seen = content
        try:
            context = self._build()
        except CertificateError as err:
            log.warning("webhook certificate changed but does not load; keeping the current "
                        "one until the files form a valid pair", error=str(err))
            return False
        with self._lock:
            self._context = context
            self.reloads += 1
        log.info("webhook certificate reloaded", cert=str(self.cert_file))
        return True

    def run(self, stop: threading.Event) -> None:
        """Poll every ``interval`` clock seconds until ``stop`` is set."""
        while not self._clock.sleep(self.interval, stop):
            self.poll()
