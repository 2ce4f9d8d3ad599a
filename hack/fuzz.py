"""Coverage-guided fuzzing (atheris, libFuzzer) of the parsers that read untrusted bytes.

Usage: ``python hack/fuzz.py TARGET [libFuzzer flags]``, e.g.
``python hack/fuzz.py chunked -atheris_runs=200000`` or ``python hack/fuzz.py cron
-max_total_time=300 corpus_dir/``. Needs ``pip install -e '.[fuzz]'`` (atheris; wheels for
CPython 3.11 on Linux x86-64). Targets, each checking the contract its module states:

* ``chunked``: :func:`pyctrl.kube.chunked.iter_chunks` on the input, whole and split in two at
  a point taken from the input: the same chunks and outcome (but see the module on bytes
  after the end), and no exception but ``ProtocolError``.
* ``cron``: :func:`cronjob_controller.dialect.check` on the input as text: a schedule or a
  ``ScheduleError``; for a five-field schedule the next and last match around a fixed time
  must bracket it.
* ``duration``: :func:`pyctrl.duration.parse_duration`: a finite float or ``ValueError``.
* ``admission``: the webhook decode path (``orjson.loads`` + ``handle_review`` with the
  CronJob handlers) on the input as a body, or on a valid CronJob review with one subtree
  replaced by the input: an AdmissionReview or a clean 400 (``JSONDecodeError`` or
  ``ReviewError``).
* ``request_head``: :func:`pyctrl.frontend.http.parse_head` and ``body_length`` on the input:
  an RFC 9112 head that parses back the same once written out, or a 400 (the contract in
  tests/unit/fuzz/test_fuzz_wire.py, whose driver this reuses).
* ``response``: :func:`pyctrl.kube.response.read_response` on the input (the first byte picks
  the read size and the method): a Response, or ProtocolError, DecodeError or NoAnswer.

A crash (any other exception or a broken assertion) stops the run and libFuzzer writes the
input to ``crash-<sha1>``; replay it with ``python hack/fuzz.py TARGET crash-<sha1>``. The
property tests in tests/unit/fuzz (Hypothesis) cover the same contracts in ``make test``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from datetime import datetime

import atheris

# Only the code under test is instrumented (every dependency would cost ~20 s at start).
with atheris.instrument_imports(include=[
    "pyctrl.kube.chunked", "pyctrl.duration", "pyctrl.webhook.admission",
    "cronjob_controller.dialect", "cronjob_controller.cronmath", "cronjob_controller.webhook",
    "cronjob_controller.validation", "cronjob_controller.defaults",
    "pyctrl.frontend.http", "pyctrl.kube.response",
]):
    import orjson

    from cronjob_controller.cronmath import last_match, next_match
    from cronjob_controller.dialect import CronFields, ScheduleError, check
    from cronjob_controller.webhook import mutate, validate
    from pyctrl.duration import parse_duration
    from tests.unit.fuzz.test_fuzz_admission import (  # the property tests' drivers
        BASE,
        PATHS,
        _check_answer,
        _envelope,
        _replace,
        _serve,
    )
    from tests.unit.fuzz.test_fuzz_chunked import decode
    from tests.unit.fuzz.test_fuzz_wire import check_answer, check_head

_AT = datetime(2026, 11, 26, 8, 30)


def chunked(data: bytes) -> None:
    if not data:
        return
    cut = data[0] % (len(data))
    body = data[1:]
    (whole, end), (parts, split_end) = decode([body], 4096), decode([body[:cut], body[cut:]],
                                                                   4096)
    # Bytes after the body are seen only when read together with its end (see the module).
    assert whole == parts and (end == split_end or (end is False and split_end is True)), (
        body, cut)


def cron(data: bytes) -> None:
    text = atheris.FuzzedDataProvider(data).ConsumeUnicodeNoSurrogates(len(data))
    try:
        fields = check(text)
    except ScheduleError:
        return
    if isinstance(fields, CronFields):
        nxt, last = next_match(fields, _AT), last_match(fields, _AT)
        assert nxt is None or nxt > _AT, (text, nxt)
        assert last is None or last <= _AT, (text, last)


def duration(data: bytes) -> None:
    text = atheris.FuzzedDataProvider(data).ConsumeUnicodeNoSurrogates(len(data))
    try:
        seconds = parse_duration(text)
    except ValueError:
        return
    assert math.isfinite(seconds), (text, seconds)


def admission(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    if fdp.ConsumeBool():  # raw bytes as the body
        _serve(validate, fdp.ConsumeBytes(fdp.remaining_bytes()))
        return
    # A valid CronJob with one subtree replaced by the input (JSON if it parses, else text):
    # orjson is not instrumented, so raw bytes alone rarely get past the decoder.
    path = PATHS[fdp.ConsumeIntInRange(0, len(PATHS) - 1)]
    operation = fdp.PickValueInList(["CREATE", "UPDATE", "DELETE", "CONNECT"])
    raw = fdp.ConsumeBytes(fdp.remaining_bytes())
    try:
        value: object = orjson.loads(raw)
    except orjson.JSONDecodeError:
        value = raw.decode("utf-8", "replace")
    request = {"uid": "u-1", "operation": operation, "object": _replace(BASE, path, value),
               "oldObject": BASE}
    for handler in (validate, mutate):
        _check_answer(_serve(handler, orjson.dumps(_envelope(request))), "u-1")


def request_head(data: bytes) -> None:
    check_head(data)


def response(data: bytes) -> None:
    if not data:
        return
    check_answer(data[1:], 1 + data[0] % 64, ("GET", "HEAD", "POST", "PUT")[data[0] >> 6])


TARGETS: dict[str, Callable[[bytes], None]] = {
    "chunked": chunked, "cron": cron, "duration": duration, "admission": admission,
    "request_head": request_head, "response": response}


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(TARGETS)}}} [libFuzzer flags]")
    target = TARGETS[sys.argv[1]]
    atheris.Setup([sys.argv[0], *sys.argv[2:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
