"""Duration flags: Go duration strings (as kube-controller-manager takes) or plain seconds."""

from __future__ import annotations

import argparse

import pytest

from pyctrl.duration import duration_arg, parse_duration


@pytest.mark.parametrize(("text", "seconds"), [
    ("15s", 15.0), ("1m30s", 90.0), ("500ms", 0.5), ("1h", 3600.0), ("1.5h", 5400.0),
    ("2h45m0.5s", 9900.5), ("250us", 250e-6), ("250µs", 250e-6), ("100ns", 100e-9),
    ("0", 0.0), ("0s", 0.0), ("-2m", -120.0), ("+3s", 3.0), (".5s", 0.5),
    ("2", 2.0), ("0.5", 0.5), (" 10 ", 10.0), ("1m1m", 120.0),
])
def test_parses_go_durations_and_plain_seconds(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "s", "15x", "1m30", "1 m", "m1", "--1s", "1e3s",
                                  "inf", "nan", "1d", "1.2.3s", "-",
                                  # found by tests/unit/fuzz: a plain number too long for a
                                  # float (it was returned as inf); non-ASCII digits
                                  "٣s", "٣", "1" * 400, "-" + "9" * 400])
def test_rejects_anything_else_naming_the_input(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


def test_flag_type_refuses_negative_and_invalid_values_as_usage_errors() -> None:
    assert duration_arg("1m30s") == 90.0
    with pytest.raises(argparse.ArgumentTypeError, match="negative"):
        duration_arg("-1s")
    with pytest.raises(argparse.ArgumentTypeError, match="invalid duration"):
        duration_arg("ten seconds")
