"""The REST client's failed exchanges as :class:`pyctrl.errors.ApiError`.

Contract:

* :func:`error_from_answer` maps a non-2xx answer (its code, body and ``Retry-After``
  header) through :func:`pyctrl.errors.from_status`: a body that is a JSON object is taken as
  the server's ``metav1.Status``; any other body (empty, not JSON, not an object) gives the
  error of the bare code.
* :func:`error_from_pool_answer` does the same for an answer the urllib3 pool returned
  unread (a watch): its body is read (a body that fails to read counts as none) and its
  connection released to the pool in any case.
* :func:`transport_error` maps a failure below HTTP (a urllib3 ``HTTPError`` or an
  ``OSError``, urllib3's ``MaxRetryError`` unwrapped to its reason): a connect or read
  timeout is :class:`pyctrl.errors.Timeout` (``reason="Timeout"``); anything else,
  :class:`pyctrl.errors.Unreachable` (``reason="ConnectionError"``, ``code=0``). The
  message names the method and URL.
"""

from __future__ import annotations

from typing import Any

import orjson
import urllib3
from urllib3.exceptions import HTTPError, MaxRetryError, NewConnectionError
from urllib3.exceptions import TimeoutError as Urllib3Timeout

from pyctrl.errors import ApiError, Timeout, Unreachable, from_status

__all__ = ["error_from_answer", "error_from_pool_answer", "transport_error"]


def error_from_answer(code: int, raw: bytes | None, retry_after: str | None) -> ApiError:
    """The error of a non-2xx answer with body ``raw`` (module docstring)."""
    try:
        status: Any = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        status = None
    return from_status(code, status if isinstance(status, dict) else None,
                       retry_after_header=retry_after)


def error_from_pool_answer(resp: urllib3.BaseHTTPResponse) -> ApiError:
    """The error of a non-2xx answer the pool returned unread; releases its connection."""
    try:
        raw: bytes | None = resp.data
    except (HTTPError, OSError):
        raw = None
    finally:
        resp.release_conn()
    return error_from_answer(resp.status, raw, resp.headers.get("Retry-After"))


def transport_error(method: str, url: str, exc: BaseException) -> ApiError:
    """The error of ``method url`` failing below HTTP with ``exc`` (module docstring)."""
    reason = exc.reason if isinstance(exc, MaxRetryError) else exc
    if isinstance(reason, Urllib3Timeout | TimeoutError) and not isinstance(
        reason, NewConnectionError
    ):
        return Timeout(f"{method} {url}: timed out: {reason}", reason="Timeout")
    return Unreachable(f"{method} {url}: {reason}", reason="ConnectionError")
