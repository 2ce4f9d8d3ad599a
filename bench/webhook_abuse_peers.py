"""The server process of ``python -m bench webhook-abuse``: a webhook server of one kind, in
its own process so its CPU is its own (the attacker is :mod:`pyctrl.testing.abuse`).

``python bench/webhook_abuse_peers.py KIND CERT_DIR PORT`` (run as a script, so that
PYTHONPATH decides which ``pyctrl`` serves): serve the CronJob
validating handler at ``/validate`` on 127.0.0.1:PORT over TLS until stdin closes; prints
``ready`` once listening, and for ``pyctrl`` its connection counters (JSON) once stopped.
KIND is ``pyctrl`` (:class:`pyctrl.webhook.WebhookServer`, from
whatever ``pyctrl`` is on the path: point PYTHONPATH at an older tree to measure an older
server), ``aiohttp`` (aiohttp.web; the certificate re-selected per handshake through an SNI
callback on :class:`pyctrl.webhook.CertWatcher`) or ``uvicorn`` (uvicorn + h11 with a
minimal ASGI app; certificate files loaded once, no reload).
"""

from __future__ import annotations

import asyncio
import ssl
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

PATH = "/validate"


def _handler() -> Any:
    from cronjob_controller.webhook import HANDLERS, VALIDATE_PATH
    return HANDLERS[VALIDATE_PATH]


def _wait_stdin() -> None:
    sys.stdin.read()


def serve_pyctrl(cert_dir: str, port: int) -> None:
    from pyctrl.webhook import WebhookServer, WebhookServerOptions
    server = WebhookServer(WebhookServerOptions(cert_dir=cert_dir, host="127.0.0.1", port=port),
                           {PATH: _handler()})
    server.start()
    print("ready", flush=True)
    _wait_stdin()
    frontend = server._frontend
    counters = {} if frontend is None else {
        "accepted": frontend.accepted, "refused": frontend.refused,
        "evicted": getattr(frontend, "evicted", None), "idle_closed": frontend.idle_closed}
    server.shutdown()
    print(orjson.dumps(counters).decode(), flush=True)


def _review_answer(body: bytes) -> tuple[int, bytes]:
    from pyctrl.webhook import ReviewError, handle_review
    try:
        review = orjson.loads(body)
        if not isinstance(review, dict):
            raise ReviewError("not an object")
        return 200, orjson.dumps(handle_review(_HANDLER, review))
    except (orjson.JSONDecodeError, ReviewError) as err:
        return 400, str(err).encode()


_HANDLER: Any = None


def serve_aiohttp(cert_dir: str, port: int) -> None:
    from aiohttp import web

    from pyctrl.webhook import CertWatcher

    watcher = CertWatcher(Path(cert_dir) / "tls.crt", Path(cert_dir) / "tls.key")
    watcher.load()
    stop = threading.Event()
    threading.Thread(target=watcher.run, args=(stop,), name="certwatcher", daemon=True).start()
    base = watcher.context()

    def pick(sslobj: ssl.SSLObject, name: str | None, ctx: ssl.SSLContext) -> None:
        sslobj.context = watcher.context()  # the newest pair for this handshake

    base.sni_callback = pick

    async def validate(request: web.Request) -> web.Response:
        status, body = _review_answer(await request.read())
        return web.Response(status=status, body=body, content_type="application/json")

    async def main() -> None:
        app = web.Application(client_max_size=7 * 1024 * 1024)
        app.router.add_post(PATH, validate)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", port, ssl_context=base, backlog=128)
        await site.start()
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, _wait_stdin)
        await runner.cleanup()

    asyncio.run(main())
    stop.set()


def serve_uvicorn(cert_dir: str, port: int) -> None:
    import uvicorn

    async def app(scope: Mapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        status, answer = _review_answer(body)
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": answer})

    config = uvicorn.Config(app, host="127.0.0.1", port=port, http="h11", log_level="error",
                            access_log=False, lifespan="off", backlog=128,
                            ssl_certfile=str(Path(cert_dir) / "tls.crt"),
                            ssl_keyfile=str(Path(cert_dir) / "tls.key"))
    server = uvicorn.Server(config)

    def exit_on_eof() -> None:
        _wait_stdin()
        server.should_exit = True

    threading.Thread(target=exit_on_eof, name="stdin", daemon=True).start()
    print("ready", flush=True)  # uvicorn binds quickly; the client retries its first connect
    server.run()


def main(argv: list[str]) -> None:
    global _HANDLER
    import logging

    import structlog
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr),
                        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    kind, cert_dir, port = argv[0], argv[1], int(argv[2])
    _HANDLER = _handler()
    {"pyctrl": serve_pyctrl, "aiohttp": serve_aiohttp, "uvicorn": serve_uvicorn}[kind](
        cert_dir, port)


if __name__ == "__main__":
    main(sys.argv[1:])
