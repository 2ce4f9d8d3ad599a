"""Fuzz: pyctrl.duration on any text, and against an independent Go-duration reference.

:func:`parse_go_duration` (integer nanoseconds, Go's grammar) is compared with
:func:`reference_ns`, written here from Go's ``time.ParseDuration`` rules with a regular
expression and exact decimals (each part's fraction truncated to whole nanoseconds, the sum
refused beyond int64). :func:`parse_duration` (flags: seconds as a float, plain numbers
allowed, blanks around ignored) returns a finite float or raises ``ValueError`` on any text,
agrees with the reference on Go durations and accepts beyond them only plain numbers.
"""

from __future__ import annotations

import argparse
import math
import re
from decimal import Decimal

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from pyctrl.duration import duration_arg, parse_duration, parse_go_duration

UNITS = {"ns": 1, "us": 10**3, "µs": 10**3, "μs": 10**3, "ms": 10**6, "s": 10**9,
         "m": 60 * 10**9, "h": 3600 * 10**9}
_PART = re.compile(r"([0-9]+\.?[0-9]*|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)")
_WHOLE = re.compile(r"[+-]?(?:0|(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))+)")

number = st.one_of(
    st.from_regex(r"\A[0-9]{1,6}\Z"),
    st.from_regex(r"\A[0-9]{0,4}\.[0-9]{1,4}\Z"),
    st.from_regex(r"\A[0-9]{1,4}\.\Z"),
    st.from_regex(r"\A[0-9]{18,22}\Z"),  # around int64
)
go_duration = st.tuples(
    st.sampled_from(["", "-", "+"]),
    st.lists(st.tuples(number, st.sampled_from(list(UNITS))).map("".join), min_size=1,
             max_size=4).map("".join),
).map("".join)
# Text near the grammar: its alphabet, in any order (most of it invalid).
near = st.text(alphabet="0123456789.+-nuµμmsh \t٣", max_size=16)


def reference_ns(text: str) -> int | None:
    """Go's ParseDuration by its rules (None: Go refuses ``text``)."""
    if not _WHOLE.fullmatch(text):
        return None
    body = text.lstrip("+-")
    if body == "0":
        return 0
    total = 0
    for value, unit in _PART.findall(body):
        total += int(Decimal(value) * UNITS[unit])  # int() truncates each part like Go
        if total > 2**63 - 1:
            return None
    return -total if text.startswith("-") else total


def _go(text: str) -> int | None:
    try:
        return parse_go_duration(text)
    except ValueError:
        return None


@given(st.one_of(go_duration, near, st.text(max_size=30)))
@example("1.s")
@example(".5ns.6ns")
@example("9223372036854775807ns")
@example("9223372036854775808ns")
@example("-0")
def test_go_parser_matches_the_reference(text: str) -> None:
    assert _go(text) == reference_ns(text), text


@given(st.one_of(st.text(max_size=40), near, go_duration))
@example("1" * 400)
@example("-" + "9" * 400)
@example("1" * 400 + "h")
@example("٣s")
def test_flag_parser_is_a_finite_number_or_a_value_error(text: str) -> None:
    try:
        seconds = parse_duration(text)
    except ValueError as err:
        assert str(err).startswith("invalid duration")
        return
    assert math.isfinite(seconds)
    ref = reference_ns(text.strip())
    if ref is not None:
        assert seconds == pytest.approx(ref / 1e9, rel=1e-12, abs=1e-12), text
    else:  # beyond Go: only a plain number of seconds
        assert re.fullmatch(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)", text.strip()), text


@given(st.one_of(go_duration, near))
def test_duration_arg_is_never_negative(text: str) -> None:
    try:
        seconds = duration_arg(text)
    except argparse.ArgumentTypeError:
        return
    assert seconds >= 0 and math.isfinite(seconds)
