"""Benchmarks: pyctrl's hot paths measured side by side with the Go originals (bench/anchors).

Run ``python -m bench <name> [--json]``; see :mod:`bench.__main__` for the subcommands.
"""
