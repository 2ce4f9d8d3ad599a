"""Test helpers that ship with pyctrl: a FakeClock, fakes, and envtest (a real control plane)."""

from pyctrl.testing.fake_clock import FakeClock

__all__ = ["FakeClock"]
