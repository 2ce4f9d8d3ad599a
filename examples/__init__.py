"""Example controllers built on pyctrl's public API."""
