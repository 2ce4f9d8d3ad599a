"""Abusive clients for tests and benches: idle and slowloris connections, in a child process.

Contract:

* :class:`Attacker` (a context manager) runs ``python -m pyctrl.testing.abuse`` against
  ``127.0.0.1:port``: ``idle`` connections that never send a byte and ``slowloris`` clients
  sending one byte a second (half inside a TLS ClientHello, half in a request head, after a
  real handshake unless ``tls=False``), spread over ``addresses`` source addresses
  (127.0.0.2, 127.0.0.3, ...; Linux routes all of 127/8 to loopback) so per-client caps
  see many clients; ``addresses=0`` attacks from 127.0.0.1, the address the tests' and
  benches' valid clients use (as when the API server reaches a webhook through the same
  egress address, a proxy or SNAT, as the attacker). Every connection the server closes
  is reopened at once, as an attacker keeps up the pressure. Entering returns once every
  connection was opened once (or failed to); :meth:`Attacker.stop` ends the child and
  returns its counters (``open_at_end``, ``reopened``, ``connect_errors``).
* The attack runs in its own process so its event loop never competes with the server or
  the measuring client for a GIL; the child inherits the open-file limit (see
  :func:`raise_open_file_limit`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import ssl
import subprocess
import sys
from pathlib import Path
from types import TracebackType

__all__ = ["Attacker", "raise_open_file_limit"]

CLIENT_HELLO_START = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(64)
HEAD = (b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 2\r\nX-Padding: " + b"a" * 200 + b"\r\n\r\n{}")
_ROOT = Path(__file__).resolve().parents[2]


def raise_open_file_limit() -> tuple[int, int]:
    """Raise this process's soft open-file limit to the hard one; returns the old limits."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return soft, hard


class Attacker:
    """The attack child process (see module docstring)."""

    def __init__(self, port: int, *, idle: int, slowloris: int, addresses: int = 16,
                 tls: bool = True) -> None:
        self.args = [str(port), str(idle), str(slowloris), str(addresses), str(int(tls))]
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> Attacker:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "pyctrl.testing.abuse", *self.args], cwd=_ROOT,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(
                [str(_ROOT), os.environ.get("PYTHONPATH", "")])},
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline().strip()
        if line != "ready":
            self.stop()
            raise RuntimeError(f"the attacker did not start: {line!r}")
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def stop(self) -> dict[str, int]:
        """End the attack (idempotent); the child's counters."""
        proc, self._proc = self._proc, None
        if proc is None:
            return {}
        try:
            out, _ = proc.communicate("", timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        lines = out.strip().splitlines()
        counters: dict[str, int] = json.loads(lines[-1]) if lines else {}
        return counters


class _Attack:
    def __init__(self, port: int, addresses: int, tls: bool) -> None:
        self.port = port
        self.addresses = addresses
        self.tls = tls
        self.open = 0
        self.reopened = 0
        self.connect_errors = 0
        self._n = 0
        self.client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        self.client.check_hostname = False
        self.client.verify_mode = ssl.CERT_NONE

    def _source(self) -> tuple[str, int]:
        if not self.addresses:
            return "127.0.0.1", 0
        self._n += 1
        return f"127.0.0.{2 + self._n % self.addresses}", 0

    async def hold(self, kind: str, opened: asyncio.Event, stop: asyncio.Event) -> None:
        first = True
        while not stop.is_set():
            writer: asyncio.StreamWriter | None = None
            try:
                tls = self.client if kind == "head" and self.tls else None
                reader, writer = await asyncio.open_connection(
                    "127.0.0.1", self.port, ssl=tls, local_addr=self._source(),
                    ssl_handshake_timeout=30 if tls else None)
                self.open += 1
                if not first:
                    self.reopened += 1
                first = False
                opened.set()
                payload = {"idle": b"", "hello": CLIENT_HELLO_START, "head": HEAD}[kind]
                await self._trickle(reader, writer, payload, stop)
            except (OSError, ssl.SSLError, TimeoutError):
                self.connect_errors += 1
                first = False
                opened.set()
                await asyncio.sleep(0.2)
            finally:
                if writer is not None:
                    self.open -= 1
                    writer.close()

    @staticmethod
    async def _trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                       payload: bytes, stop: asyncio.Event) -> None:
        i = 0
        while not stop.is_set():
            if i < len(payload):
                writer.write(payload[i:i + 1])
                i += 1
            with contextlib.suppress(TimeoutError):
                if not await asyncio.wait_for(reader.read(4096), 1.0):
                    return  # the server closed it: reopen


async def _attack(port: int, idle: int, slowloris: int, addresses: int,
                  tls: bool) -> dict[str, int]:
    state = _Attack(port, addresses, tls)
    stop = asyncio.Event()
    kinds = ["idle"] * idle + ["hello", "head"] * (slowloris // 2) + ["head"] * (slowloris % 2)
    events = [asyncio.Event() for _ in kinds]
    tasks = []
    for i, (kind, opened) in enumerate(zip(kinds, events, strict=True)):
        tasks.append(asyncio.create_task(state.hold(kind, opened, stop)))
        if i % 50 == 49:
            await asyncio.sleep(0.02)  # do not overrun the listen backlog
    for event in events:
        await event.wait()
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    result = {"open_at_end": state.open, "reopened": state.reopened,
              "connect_errors": state.connect_errors}
    stop.set()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return result


def main(argv: list[str]) -> None:
    port, idle, slowloris, addresses, tls = map(int, argv[:5])
    print(json.dumps(asyncio.run(_attack(port, idle, slowloris, addresses, bool(tls)))),
          flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
