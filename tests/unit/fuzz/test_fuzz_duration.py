"""Fuzz: pyctrl.duration.parse_duration on any text, and against the dialect's Go parser.

Two parsers of Go durations live in this repository: :func:`pyctrl.duration.parse_duration`
(flags; seconds as a float, plain numbers allowed) and
:func:`cronjob_controller.dialect.parse_go_duration` (``@every``; integer nanoseconds, Go's
exact grammar). On any text the first returns a finite float or raises ``ValueError``; on
text in Go's grammar both agree (up to float rounding), and text without a unit that Go
refuses is accepted by parse_duration only as a plain number of seconds.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from cronjob_controller.dialect import ScheduleError, parse_go_duration
from pyctrl.duration import duration_arg, parse_duration

UNITS = ["ns", "us", "µs", "μs", "ms", "s", "m", "h"]
number = st.one_of(
    st.from_regex(r"\A[0-9]{1,6}\Z"),
    st.from_regex(r"\A[0-9]{0,4}\.[0-9]{1,4}\Z"),
    st.from_regex(r"\A[0-9]{1,4}\.\Z"),
)
go_duration = st.tuples(
    st.sampled_from(["", "-", "+"]),
    st.lists(st.tuples(number, st.sampled_from(UNITS)).map("".join), min_size=1, max_size=4)
    .map("".join),
).map("".join)
# Text near the grammar: its alphabet, in any order (most of it invalid).
near = st.text(alphabet="0123456789.+-nuµμmsh \t٣", max_size=16)


def _go_seconds(text: str) -> float | None:
    try:
        return parse_go_duration(text) / 1e9
    except ScheduleError:
        return None


@given(st.one_of(st.text(max_size=40), near, go_duration))
@example("1" * 400)
@example("1" * 400 + "h")
@example("٣s")
@example("٣")
def test_any_text_is_a_finite_number_of_seconds_or_a_value_error(text: str) -> None:
    try:
        seconds = parse_duration(text)
    except ValueError as err:
        assert repr(text) in str(err) or text[:20] in str(err)
        return
    assert math.isfinite(seconds)
    assert text.strip().isascii() or "µ" in text or "μ" in text, f"{text!r} -> {seconds}"


@given(go_duration)
def test_go_grammar_agrees_with_the_dialect_parser(text: str) -> None:
    go = _go_seconds(text)
    if go is None:  # beyond int64 nanoseconds: Go refuses; flags may be that large
        return
    # Go truncates each part to whole nanoseconds: up to 1 ns apart per part.
    assert parse_duration(text) == pytest.approx(go, rel=1e-9, abs=4e-9)


@given(near)
def test_near_grammar_accepts_what_go_accepts_and_only_numbers_besides(text: str) -> None:
    go = _go_seconds(text)
    try:
        ours: float | None = parse_duration(text)
    except ValueError:
        ours = None
    if go is not None and text == text.strip():
        assert ours == pytest.approx(go, rel=1e-9, abs=1e-8), text
    elif ours is not None and go is None:
        # Accepted beyond Go: a plain number of seconds, or surrounding whitespace.
        plain = text.strip().lstrip("+-")
        assert (plain.replace(".", "", 1).isdigit() and plain.isascii()) or (
            _go_seconds(text.strip()) is not None), text


@given(st.one_of(go_duration, near))
def test_duration_arg_is_never_negative(text: str) -> None:
    import argparse

    try:
        seconds = duration_arg(text)
    except argparse.ArgumentTypeError:
        return
    assert seconds >= 0 and math.isfinite(seconds)
