"""Metrics auth's log under a flood of bad tokens (issue 43 item 3): bounded as the outage's
(pyctrl._errorlog), one line per kind of refusal or failure per interval, each counting what
it did not write; so N requests cost a number of lines set by the flood's length, not by N."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator, MutableMapping
from typing import Any

import pytest
from structlog.testing import capture_logs

from pyctrl.errors import ServerError, Unreachable
from pyctrl.kube import TOKEN_REVIEWS
from pyctrl.serving import MetricsAuth
from pyctrl.serving.http import HTTPServerThread
from pyctrl.testing import FakeClock
from pyctrl.testing.fake_client import Action
from tests.unit.serving.test_metrics_auth_budget import Reviews

SECONDS = 60
PER_SECOND = 200  # random tokens
INTERVAL = 10.0  # ErrorLog's


Lines = list[MutableMapping[str, Any]]


def _flood(auth: MetricsAuth, clock: FakeClock) -> tuple[Lines, dict[int, int]]:
    """SECONDS of PER_SECOND random tokens; the log lines and the answers by status."""
    statuses: dict[int, int] = {}
    with capture_logs() as lines:
        for n in range(SECONDS * PER_SECOND):
            denied = auth("/metrics", f"Bearer random-{n}")
            assert denied is not None
            statuses[denied[0]] = statuses.get(denied[0], 0) + 1
            clock.step(1 / PER_SECOND)
    return lines, statuses


def _bounded(lines: Lines, statuses: dict[int, int]) -> None:
    # Per signature at most one line per interval (+1: the flood's first line), and
    # 3 signatures at most (401, 429, a failed review).
    assert len(lines) <= 3 * (SECONDS / INTERVAL + 1), [line["event"] for line in lines]
    for line in lines:
        assert "token" not in str(line) or "random-" not in str(line)  # never the token


def _failing(err: Exception) -> Any:
    def react(action: Action) -> dict[str, Any]:
        raise err
    return react


@pytest.mark.parametrize("err", [Unreachable("POST tokenreviews: refused",
                                             reason="ConnectionError"),
                                 ServerError("etcd timeout", 500, "InternalError"),
                                 RuntimeError("a bug in a reactor")])
def test_failing_reviews_log_a_bounded_number_of_lines(err: Exception) -> None:
    api, clock = Reviews(), FakeClock()
    api.client.prepend_reactor("create", TOKEN_REVIEWS, _failing(err))
    auth = MetricsAuth(api.client, clock=clock, review_qps=5, review_burst=10)
    lines, statuses = _flood(auth, clock)
    assert statuses[401] >= 300  # each failed review is a 401 (the budget: 10 + 5/s)
    _bounded(lines, statuses)
    failed = [line for line in lines if line["event"] == "metrics authentication failed"]
    assert 1 <= len(failed) <= SECONDS / INTERVAL + 1
    assert sum(1 + line.get("suppressed", 0) for line in failed) <= statuses[401]
    assert sum(1 + line.get("suppressed", 0) for line in failed) >= statuses[401] - 5 * 10
    assert "Traceback" not in str([line for line in failed if "exc_info" not in line])


def test_refusals_are_counted_in_one_line_per_interval() -> None:
    api, clock = Reviews(), FakeClock()
    auth = MetricsAuth(api.client, clock=clock, review_qps=5, review_burst=10)
    lines, statuses = _flood(auth, clock)
    assert statuses[429] > 10000 and statuses[401] >= 300
    _bounded(lines, statuses)
    for status in (401, 429):
        refused = [line for line in lines if line["event"] == "metrics requests refused"
                   and line["status"] == status]
        assert 1 <= len(refused) <= SECONDS / INTERVAL + 1, status
        counted = sum(1 + line.get("suppressed", 0) for line in refused)
        # What came after the last line is counted by the next one (none here).
        assert statuses[status] - PER_SECOND * INTERVAL <= counted <= statuses[status]


def test_a_single_refusal_is_logged_at_once() -> None:
    api, clock = Reviews(), FakeClock()
    auth = MetricsAuth(api.client, clock=clock)
    with capture_logs() as lines:
        auth("/metrics", "Bearer forged")
        auth("/metrics", None)
    assert [(line["event"], line["status"]) for line in lines] == [
        ("metrics requests refused", 401)]


def test_a_handler_bug_every_scrape_meets_is_logged_once(broken_server: Any) -> None:
    server = broken_server
    with capture_logs() as lines:
        for _ in range(20):
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(f"http://127.0.0.1:{server.address[1]}/metrics",
                                       timeout=10)
            with err.value:  # an HTTPError holds the response open (a ResourceWarning on 3.14)
                assert err.value.code == 500
    failed = [line for line in lines if line["event"] == "http handler failed"]
    assert len(failed) <= 2 and "exc_info" in failed[0], failed


def _broken(path: str, query: Any, headers: Any) -> Any:
    raise RuntimeError("a bug in the metrics handler")


@pytest.fixture
def broken_server() -> Iterator[HTTPServerThread]:
    server = HTTPServerThread("metrics", ("127.0.0.1", 0), _broken)
    server.start()
    yield server
    server.shutdown()
