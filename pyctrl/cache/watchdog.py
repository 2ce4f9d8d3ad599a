"""A Reflector's watchdog: closes its open watch on stop, or when it has gone silent.

Contract of :class:`WatchDog` (one per :class:`pyctrl.cache.reflector.Reflector`):

* The reflector hands over each watch it opens (:meth:`WatchDog.opened`, with the monotonic
  time it started opening it), sets :attr:`WatchDog.last_activity` to the clock's monotonic
  time on every event or bookmark it receives, and hands the watch back when it is done
  with it (:meth:`WatchDog.closed`, which closes it).
* :meth:`WatchDog.run` (the reflector's ``<name>-watchdog`` thread, until ``stop`` is set)
  closes the open watch once nothing arrived on it for ``silence`` seconds, and marks it
  :meth:`WatchDog.silenced` (until the next :meth:`WatchDog.opened`), so the reflector tells
  the error the close causes in its reader from a broken connection. When ``stop`` is set it
  closes the open watch at once, so a blocked read returns, and returns.
* It only closes streams; it never reads from one. Time comes only from the injected clock,
  and its waits are on ``stop`` (:meth:`pyctrl.clock.Clock.sleep`).
"""

from __future__ import annotations

import threading

from pyctrl.clock import Clock
from pyctrl.kube.interface import WatchStream

__all__ = ["WatchDog"]


class WatchDog:
    """Closes a reflector's open watch on stop or after ``silence`` seconds of nothing."""

    __slots__ = ("_clock", "_lock", "_silenced", "_stream", "last_activity", "silence")

    def __init__(self, clock: Clock, silence: float) -> None:
        if silence <= 0:
            raise ValueError("watch_silence_timeout must be positive")
        self._clock = clock
        self.silence = silence
        self._lock = threading.Lock()
        self._stream: WatchStream | None = None
        self.last_activity = 0.0  # monotonic time of the open watch's last event
        self._silenced = False

    def opened(self, stream: WatchStream, started: float) -> None:
        """Hand a newly opened watch to the watchdog (stop and silence close it)."""
        with self._lock:
            self._stream = stream
            self.last_activity = started
            self._silenced = False

    def closed(self, stream: WatchStream) -> None:
        """The reflector is done with ``stream``: forget and close it."""
        with self._lock:
            self._stream = None
        stream.close()

    def silenced(self) -> bool:
        """Whether the watchdog closed the last opened watch for its silence."""
        with self._lock:
            return self._silenced

    def run(self, stop: threading.Event) -> None:
        """Close a silent watch, and the open watch on stop (module docstring)."""
        clock = self._clock
        while True:
            if stop.is_set():
                with self._lock:
                    stream, self._stream = self._stream, None
                if stream is not None:
                    stream.close()
                return
            with self._lock:
                stream = self._stream
                wait = self.silence
                if stream is not None:
                    wait = self.last_activity + self.silence - clock.monotonic()
                    if wait <= 0:
                        self._silenced = True
                        self._stream = None
            if stream is not None and wait <= 0:
                stream.close()
                continue
            clock.sleep(max(wait, 0.001), stop)
