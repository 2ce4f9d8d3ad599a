"""Durations as Kubernetes components take them on the command line (Go's time.ParseDuration).

Contract: :func:`parse_duration` accepts Go duration strings (``15s``, ``1m30s``, ``500ms``,
``1.5h``, ``-2m``, ``0``; units ``ns``, ``us``/``µs``, ``ms``, ``s``, ``m``, ``h``; a sign
applies to the whole string) and, for compatibility with earlier pyctrl flags, plain numbers
meaning seconds (``2``, ``0.5``). It returns seconds as a float and raises ``ValueError``
naming the input for anything else (no unit between numbers, unknown unit, empty, ``inf``,
``nan``). :func:`duration_arg` is an argparse ``type`` that also refuses negative values.
"""

from __future__ import annotations

import argparse
import math
import re

__all__ = ["duration_arg", "parse_duration"]

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0,
          "h": 3600.0}
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)")


def parse_duration(text: str) -> float:
    """Seconds in ``text`` (a Go duration or a plain number of seconds); see module docs."""
    s = text.strip()
    if _NUMBER.fullmatch(s):
        return float(s)
    sign = 1.0
    if s[:1] in ("+", "-"):
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if not s:
        raise ValueError(f"invalid duration {text!r}")
    total = 0.0
    pos = 0
    while pos < len(s):
        m = _PART.match(s, pos)
        if m is None:
            raise ValueError(f"invalid duration {text!r} (use e.g. 15s, 1m30s, 500ms or a "
                             "number of seconds)")
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if not math.isfinite(total):
        raise ValueError(f"invalid duration {text!r}")
    return sign * total


def duration_arg(text: str) -> float:
    """argparse ``type=``: a non-negative duration in seconds (usage error otherwise)."""
    try:
        seconds = parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if seconds < 0:
        raise argparse.ArgumentTypeError(f"duration {text!r} must not be negative")
    return seconds
