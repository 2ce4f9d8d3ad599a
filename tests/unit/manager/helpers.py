"""Reading a running Manager's servers in unit tests (run it with tests/threads.py).

* :func:`http_get` reads a probe path (or ``/metrics`` from the metrics server) and returns
  ``(status, body)`` for every HTTP status, errors included; :func:`get_url` does the same
  for any URL, with an optional bearer token and TLS context.
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request

from pyctrl.manager import Manager

__all__ = ["get_url", "http_get"]


def get_url(url: str, token: str | None = None,
            context: ssl.SSLContext | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=5, context=context) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        with err:  # closes its response (3.14 warns of one left open)
            return err.code, err.read().decode()


def http_get(manager: Manager, path: str) -> tuple[int, str]:
    address = manager.health_probe_address if path != "/metrics" else manager.metrics_address
    assert address is not None
    return get_url(f"http://127.0.0.1:{address[1]}{path}")

