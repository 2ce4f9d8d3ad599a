"""The webhook server's log under a flood of bad or failing reviews (issue 43 item 3): bounded
as the outage's (pyctrl._errorlog), a line per kind per interval of the server's clock, the
next one counting the rest, and a handler bug's traceback once."""

from __future__ import annotations

import json

from structlog.testing import capture_logs

from pyctrl.testing import FakeClock
from pyctrl.webhook import CertificatePaths
from tests.unit.webhook.helpers import Start, request, review

N = 25


def test_a_flood_of_bad_and_failing_reviews_logs_a_line_per_kind_per_interval(
        start: Start, certs: CertificatePaths) -> None:
    clock = FakeClock()
    server = start(certs.ca_file.parent, clock=clock)
    with capture_logs() as lines:
        for _ in range(N):
            assert request(server.port, certs.ca_file, "POST", "/allow", b"not json")[0] == 400
            assert request(server.port, certs.ca_file, "POST", "/boom",
                           json.dumps(review()).encode())[0] == 500
        clock.step(10.0)
        assert request(server.port, certs.ca_file, "POST", "/allow", b"[]")[0] == 400
    bad = [line for line in lines if line["event"] == "bad admission request"]
    failed = [line for line in lines if line["event"] == "admission handler failed"]
    assert len(bad) == 2, bad
    assert bad[1]["suppressed"] == N - 1 and bad[1]["error"] == "the body is not a JSON object"
    assert 1 <= len(failed) <= 5 and sum(1 for line in failed if "exc_info" in line) == 1
