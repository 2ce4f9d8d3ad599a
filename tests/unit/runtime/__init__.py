"""Unit tests for the pyctrl runtime: leader election, recorder, controller, handlers."""
