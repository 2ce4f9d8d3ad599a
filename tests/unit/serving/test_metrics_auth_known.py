"""Known tokens (issue 35 item 3): a token allowed once keeps a review budget of its own, so
a flood of bad tokens spending the shared budget never blinds the scraper; its decision still
expires after ttl, so revocation is honoured within it."""

from __future__ import annotations

from typing import Any

import pytest

from pyctrl.kube import TOKEN_REVIEWS
from pyctrl.serving import MetricsAuth
from pyctrl.testing import FakeClock
from pyctrl.testing.fake_client import Action
from tests.unit.serving.test_metrics_auth_budget import GOOD, Reviews


def _flood_and_scrape(auth: MetricsAuth, clock: FakeClock, *, seconds: int
                      ) -> tuple[list[int | None], dict[int, int]]:
    """Every 0.1 s 4 random tokens; every 2 s a scrape with GOOD. The scrapes' statuses
    (None: served) and the flood's counts by status."""
    scrapes: list[int | None] = []
    flood: dict[int, int] = {}
    n = 0
    for tick in range(seconds * 10):
        for _ in range(4):
            n += 1
            denied = auth("/metrics", f"Bearer random-{n}")
            assert denied is not None
            flood[denied[0]] = flood.get(denied[0], 0) + 1
        if tick % 20 == 0:
            answer = auth("/metrics", f"Bearer {GOOD}")
            scrapes.append(None if answer is None else answer[0])
        clock.step(0.1)
    return scrapes, flood


def test_the_scraper_is_answered_through_a_flood_of_random_tokens() -> None:
    api, clock = Reviews(), FakeClock()
    auth = MetricsAuth(api.client, clock=clock, ttl=10.0, review_qps=5, review_burst=10)
    scrapes, flood = _flood_and_scrape(auth, clock, seconds=60)
    assert scrapes == [None] * 30  # every 2 s for 60 s, the allowed entry expiring 6 times
    assert flood[429] > 2000 and flood[401] <= 10 + 5 * 60
    assert auth.known() == 1


def test_a_revoked_token_is_refused_within_the_ttl_and_forgotten() -> None:
    api, clock = Reviews(), FakeClock()
    auth = MetricsAuth(api.client, clock=clock, ttl=10.0, review_qps=5, review_burst=10)
    assert auth("/metrics", f"Bearer {GOOD}") is None
    api.client.prepend_reactor("create", TOKEN_REVIEWS, _revoked)
    clock.step(9.9)
    assert auth("/metrics", f"Bearer {GOOD}") is None  # the cached decision
    clock.step(0.2)
    assert auth("/metrics", f"Bearer {GOOD}") == (401, "text/plain; charset=utf-8",
                                                   b"Unauthorized\n")
    assert auth.known() == 0


def _revoked(action: Action) -> dict[str, Any]:
    return {**action.object, "status": {"authenticated": False}}


def test_known_tokens_are_bounded_and_expire() -> None:
    api, clock = Reviews(), FakeClock()
    auth = MetricsAuth(api.client, clock=clock, max_entries=1, known_ttl=60.0, review_qps=0)
    assert auth("/metrics", f"Bearer {GOOD}") is None
    assert auth.known() == 1
    clock.step(60.0)
    assert auth.known() == 0


def test_invalid_known_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="known_burst"):
        MetricsAuth(Reviews().client, known_qps=1, known_burst=0)
