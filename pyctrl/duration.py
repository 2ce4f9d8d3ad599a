"""Durations as Kubernetes components write them (Go's ``time.ParseDuration``): one parser.

Contract:

* :func:`parse_go_duration` is Go's ``time.ParseDuration``, exactly: a sign for the whole
  string, then one or more ``<number><unit>`` parts (``1h30m``, ``1.5h``, ``.5s``, ``300ms``;
  units ``ns``, ``us``/``µs``, ``ms``, ``s``, ``m``, ``h``; ``0`` alone needs no unit). It
  returns integer nanoseconds and raises ``ValueError`` with Go's message (``invalid
  duration``, ``missing unit in duration``, ``unknown unit``, ``too large`` beyond int64).
* :func:`parse_duration` is the command-line form: a Go duration, or (for compatibility with
  earlier pyctrl flags) a plain number of seconds (``2``, ``0.5``); surrounding blanks are
  ignored. It returns seconds as a float and raises ``ValueError`` starting ``invalid
  duration`` and naming the input for anything else (``inf``, ``nan``, ``1d``, ``1 m``...).
* :func:`duration_arg` is an argparse ``type`` that also refuses negative values.
"""

from __future__ import annotations

import argparse
import math
import re

__all__ = ["duration_arg", "parse_duration", "parse_go_duration"]

_UNITS_NS = {
    "ns": 1, "us": 1_000, "\u00b5s": 1_000, "\u03bcs": 1_000, "ms": 1_000_000,
    "s": 1_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000,
}
_GO_NUMBER = re.compile(r"([0-9]*)(?:\.([0-9]*))?")
_GO_UNIT = re.compile(r"[^0-9.]*")
_MAX_DURATION = 2**63 - 1
_SECONDS = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)")


def parse_go_duration(text: str) -> int:
    """Nanoseconds in a Go ``time.ParseDuration`` string such as ``1h30m`` or ``1.5h``."""
    rest = text
    negative = rest[:1] == "-"
    if rest[:1] in ("-", "+"):
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise ValueError(f'invalid duration "{text}"')
    total = 0
    while rest:
        number = _GO_NUMBER.match(rest)
        assert number is not None  # the pattern matches the empty string
        whole, fraction = number.group(1), number.group(2) or ""
        if not whole and not fraction:
            raise ValueError(f'invalid duration "{text}"')
        rest = rest[number.end():]
        unit_match = _GO_UNIT.match(rest)
        unit = unit_match.group(0) if unit_match else ""
        if not unit:
            raise ValueError(f'missing unit in duration "{text}" (use ns, us, ms, s, m or h)')
        if unit not in _UNITS_NS:
            raise ValueError(
                f'unknown unit "{unit}" in duration "{text}" (use ns, us, ms, s, m or h)')
        rest = rest[len(unit):]
        scale = _UNITS_NS[unit]
        whole = whole.lstrip("0")
        if len(whole) > 19:  # beyond int64 in any unit; and spares int() a huge string
            raise ValueError(f'invalid duration "{text}": too large')
        total += int(whole or "0") * scale
        if fraction:
            # Go stops reading fraction digits once they exceed its precision; so do we.
            fraction = fraction[:18]
            total += int(fraction) * scale // 10 ** len(fraction)
        if total > _MAX_DURATION:
            raise ValueError(f'invalid duration "{text}": too large')
    return -total if negative else total


def parse_duration(text: str) -> float:
    """Seconds in ``text`` (a Go duration or a plain number of seconds); see module docs."""
    s = text.strip()
    if _SECONDS.fullmatch(s):
        seconds = float(s)
        if not math.isfinite(seconds):  # hundreds of digits: float() says inf
            raise ValueError(f"invalid duration {text!r}: too large")
        return seconds
    try:
        return parse_go_duration(s) / 1e9
    except ValueError as err:
        raise ValueError(f"invalid duration {text!r} (use e.g. 15s, 1m30s, 500ms or a number "
                         f"of seconds): {err}") from None


def duration_arg(text: str) -> float:
    """argparse ``type=``: a non-negative duration in seconds (usage error otherwise)."""
    try:
        seconds = parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if seconds < 0:
        raise argparse.ArgumentTypeError(f"duration {text!r} must not be negative")
    return seconds
