"""A tiny scripted HTTP/1.1 server for RESTClient unit tests (real sockets, no mocks).

Each test sets ``stub.respond`` to a function from :class:`Request` to :class:`Reply`. A reply
with ``chunks`` is sent with chunked transfer encoding, one HTTP chunk per item; an item that is
a ``threading.Event`` makes the handler wait for it instead (to hold a stream open). Every
thread is joined by :meth:`StubServer.stop`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    chunks: Iterable[bytes | threading.Event] | None = None


class StubServer:
    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.respond: Callable[[Request], Reply] = lambda req: Reply(body={"kind": "Ok"})
        self.lock = threading.Condition()
        self.stopped = False
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                url = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                req = Request(
                    self.command, url.path,
                    {k: v[0] for k, v in parse_qs(url.query).items()},
                    {k.lower(): v for k, v in self.headers.items()},
                    self.rfile.read(length) if length else b"",
                )
                with stub.lock:
                    stub.requests.append(req)
                    stub.lock.notify_all()
                reply = stub.respond(req)
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                if reply.chunks is not None:
                    self.send_header("Transfer-Encoding", "chunked")
                    # The connection is closed after a streamed answer, so say so: without
                    # the header a client pools it, and reusing it before the FIN arrived
                    # (a busy machine) failed the next request with RemoteDisconnected.
                    self.send_header("Connection", "close")
                    self.end_headers()
                    try:
                        for chunk in reply.chunks:
                            if isinstance(chunk, threading.Event):
                                chunk.wait(10)
                                continue
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                            self.wfile.flush()
                        self.wfile.write(b"0\r\n\r\n")
                        self.wfile.flush()
                    except OSError:
                        pass
                    self.close_connection = True
                    return
                data = b"" if reply.body is None else (
                    reply.body if isinstance(reply.body, bytes) else orjson.dumps(reply.body))
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle  # noqa: N815

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = False
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, name="stub-apiserver",
                                       kwargs={"poll_interval": 0.05})
        self.thread.start()

    def wait_requests(self, count: int, timeout: float = 5.0) -> bool:
        """Block (real time) until at least ``count`` requests arrived."""
        with self.lock:
            return self.lock.wait_for(lambda: len(self.requests) >= count, timeout)

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        self.server.shutdown()
        self.server.server_close()  # joins handler threads (block_on_close)
        self.thread.join(5.0)
