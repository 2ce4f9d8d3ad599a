"""pyctrl: a client-go style Kubernetes controller framework for Python."""

from pyctrl.clock import Clock, RealClock

__all__ = ["Clock", "RealClock"]
