"""Every CronJob review answers within its deadline whatever the dry run does (issue 35 item
6): a real WebhookServer on 127.0.0.1 with 4 workers, the dry run hanging, 12 reviews at
once; and the deadline the server gives handlers (the API server's ?timeout= and the
Admission's timeoutSeconds)."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from cronjob_controller.webhook import ADMISSION, VALIDATE_PATH, handlers
from pyctrl.kube import JOBS
from pyctrl.testing import Action, FakeClient
from pyctrl.webhook import (
    AdmissionResponse,
    WebhookServer,
    WebhookServerOptions,
    allowed,
    remaining,
)
from tests.unit.cronjob.test_webhook_dry_run import cronjob
from tests.unit.webhook.helpers import new_certs, request


def _review(uid: str) -> bytes:
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {"uid": uid, "operation": "CREATE", "namespace": "ns",
                                   "object": cronjob()}}).encode()


def test_twelve_reviews_answer_within_the_timeout_while_the_dry_run_hangs(
        tmp_path: Path) -> None:
    certs = new_certs(tmp_path)
    hang = threading.Event()
    client = FakeClient()

    def stuck(action: Action) -> None:
        hang.wait(20)

    client.prepend_reactor("create", JOBS, stuck)
    server = WebhookServer(WebhookServerOptions(cert_dir=str(certs.cert_file.parent),
                                                host="127.0.0.1", port=0, workers=4),
                           handlers(client), admission=ADMISSION)
    server.start()
    try:
        def one(i: int) -> tuple[float, int, dict[str, Any]]:
            begin = time.monotonic()
            status, body = request(server.port, certs.ca_file, "POST",
                                   f"{VALIDATE_PATH}?timeout=2s", _review(f"u{i}"))
            return time.monotonic() - begin, status, json.loads(body)

        with ThreadPoolExecutor(12) as pool:
            answers = list(pool.map(one, range(12)))
    finally:
        hang.set()
        server.shutdown()
    for took, status, review in answers:
        assert status == 200 and review["response"]["allowed"] is True
        assert "dry run not possible" in review["response"]["warnings"][0]
        assert took < 2.0, took  # the API server's timeout; the workers alone would take 10 s


def _probe(seen: list[float | None]) -> Any:
    def handle(request: object) -> AdmissionResponse:
        seen.append(remaining())
        return allowed()
    return handle


def test_handlers_see_the_shorter_of_the_query_timeout_and_the_admissions(
        tmp_path: Path) -> None:
    certs = new_certs(tmp_path)
    seen: list[float | None] = []
    server = WebhookServer(WebhookServerOptions(cert_dir=str(certs.cert_file.parent),
                                                host="127.0.0.1", port=0),
                           {"/a": _probe(seen), "/b": _probe(seen)},
                           admission={"/a": ADMISSION[VALIDATE_PATH]})
    server.start()
    try:
        for path in ("/a", "/a?timeout=2s", "/a?timeout=30s", "/b", "/b?timeout=3s",
                     "/b?timeout=junk"):
            assert request(server.port, certs.ca_file, "POST", path, _review("u"))[0] == 200
    finally:
        server.shutdown()
    a5, a2, a30, b_none, b3, b_junk = seen
    assert a5 is not None and 4.5 < a5 <= 4.75
    assert a2 is not None and 1.5 < a2 <= 1.75
    assert a30 is not None and 4.5 < a30 <= 4.75
    assert b_none is None and b_junk is None
    assert b3 is not None and 2.5 < b3 <= 2.75
    assert remaining() is None  # outside a review
