"""Metrics auth on a budget of its own (issue 25 item 2): refusals cached apart from the
allowed decisions, a bounded review rate answered 429 without an API call, and a client of its
own, so a flood of random bearer tokens never reaches the controller's client."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from pyctrl import HealthOptions, Manager, ManagerOptions, MetricsOptions
from pyctrl.kube import SUBJECT_ACCESS_REVIEWS, TOKEN_REVIEWS, KubeConfig, RESTClient
from pyctrl.serving import MetricsAuth
from pyctrl.testing import FakeClient, FakeClock
from pyctrl.testing.fake_client import Action
from tests.threads import running_manager
from tests.unit.kube.http_stub import Reply, Request, StubServer

GOOD = "good-token"


class Reviews:
    """A FakeClient answering reviews: ``GOOD`` is a user allowed everything."""

    def __init__(self) -> None:
        self.client = FakeClient()
        self.client.prepend_reactor("create", TOKEN_REVIEWS, self._token)
        self.client.prepend_reactor("create", SUBJECT_ACCESS_REVIEWS, self._access)

    @staticmethod
    def _token(action: Action) -> dict[str, Any]:
        ok = action.object["spec"]["token"] == GOOD
        status: dict[str, Any] = {"authenticated": ok}
        if ok:
            status["user"] = {"username": "prometheus"}
        return {**action.object, "status": status}

    @staticmethod
    def _access(action: Action) -> dict[str, Any]:
        return {**action.object, "status": {"allowed": True}}

    def count(self, token: str | None = None) -> int:
        return sum(1 for a in self.client.actions if a.verb == "create"
                   and (token is None or a.object["spec"].get("token") == token))


def test_a_refusal_is_cached_for_the_negative_ttl_only() -> None:
    api, clock = Reviews(), FakeClock()
    auth = MetricsAuth(api.client, clock=clock, negative_ttl=10.0, review_qps=0)
    for _ in range(3):
        assert auth("/metrics", "Bearer bad")[0] == 401  # type: ignore[index]
    assert api.count("bad") == 1
    clock.step(9.9)
    auth("/metrics", "Bearer bad")
    assert api.count("bad") == 1
    clock.step(0.2)
    auth("/metrics", "Bearer bad")
    assert api.count("bad") == 2


def test_a_flood_of_refusals_never_evicts_the_allowed_scraper() -> None:
    api, clock = Reviews(), FakeClock()
    auth = MetricsAuth(api.client, clock=clock, ttl=10.0, max_entries=2, max_negative=8,
                       review_qps=0)
    assert auth("/metrics", f"Bearer {GOOD}") is None
    for i in range(100):
        auth("/metrics", f"Bearer random-{i}")
    assert auth.cached() == (1, 8)  # refusals bounded, the allowed entry kept
    before = api.count()
    assert auth("/metrics", f"Bearer {GOOD}") is None
    assert api.count() == before  # served from the cache: no review


def test_reviews_beyond_the_budget_are_429_without_an_api_call() -> None:
    api, clock = Reviews(), FakeClock()
    auth = MetricsAuth(api.client, clock=clock, review_qps=5, review_burst=10)
    answers = [auth("/metrics", f"Bearer random-{i}") for i in range(30)]
    statuses = [a[0] for a in answers if a is not None]
    assert statuses == [401] * 10 + [429] * 20
    assert api.count() == 10
    clock.step(1.0)  # 5 tokens refilled
    again = [auth("/metrics", f"Bearer random-{i}") for i in range(10, 20)]
    assert [a[0] for a in again if a is not None] == [401] * 5 + [429] * 5
    assert api.count() == 15
    assert auth.cached() == (0, 15)  # 429s are never cached


def test_the_access_review_takes_from_the_same_budget() -> None:
    api, clock = Reviews(), FakeClock()
    auth = MetricsAuth(api.client, clock=clock, review_qps=1, review_burst=1)
    denied = auth("/metrics", f"Bearer {GOOD}")
    assert denied is not None and denied[0] == 429  # the TokenReview took the only token
    assert api.count() == 1 and auth.cached() == (0, 0)  # no access review, nothing cached
    wider = MetricsAuth(api.client, clock=clock, review_qps=1, review_burst=2)
    assert wider("/metrics", f"Bearer {GOOD}") is None
    assert api.count() == 3


def test_invalid_budgets_are_refused() -> None:
    with pytest.raises(ValueError, match="review_burst"):
        MetricsAuth(FakeClient(), review_qps=5, review_burst=0)
    with pytest.raises(ValueError, match="auth_burst"):
        MetricsOptions(auth_qps=5, auth_burst=0)


# -- a Manager whose main client is a RESTClient: count the requests each client sends -----
@pytest.fixture
def apiserver() -> Iterator[StubServer]:
    stub = StubServer()

    def respond(req: Request) -> Reply:
        if req.path.endswith("/tokenreviews"):
            return Reply(201, {**req.json(), "status": {"authenticated": False}})
        return Reply(404, {"kind": "Status", "code": 404})

    stub.respond = respond
    yield stub
    stub.stop()


def _flood(url: str, tokens: int) -> list[int]:
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE
    codes = []
    for i in range(tokens):
        req = urllib.request.Request(url, headers={"Authorization": f"Bearer random-{i}"})
        try:
            with urllib.request.urlopen(req, timeout=10, context=insecure) as resp:
                codes.append(resp.status)
        except urllib.error.HTTPError as err:
            with err:  # closes its response (3.14 warns of one left open)
                codes.append(err.code)
    return codes


def test_a_flood_of_random_tokens_never_reaches_the_controllers_client(
    apiserver: StubServer,
) -> None:
    main = RESTClient(KubeConfig.from_url(apiserver.url), qps=50, burst=100,
                      user_agent="controller")
    clock = FakeClock()  # the review budget does not refill: the count is exact
    mgr = Manager(main, ManagerOptions(
        metrics=MetricsOptions(bind_address="127.0.0.1:0", secure=True, runtime_metrics=False,
                               auth_qps=5, auth_burst=10),
        health=HealthOptions(bind_address="127.0.0.1:0")), clock=clock)
    try:
        with running_manager(mgr) as runner:
            address = mgr.metrics_address
            assert address is not None
            codes = _flood(f"https://127.0.0.1:{address[1]}/metrics", 40)
    finally:
        main.close()
    assert not runner.thread.is_alive()
    assert codes.count(401) == 10 and codes.count(429) == 30
    agents = [r.headers.get("user-agent") for r in apiserver.requests]
    assert agents == ["pyctrl-metrics-auth"] * 10  # and none from the controller's client
