"""``python -m bench models`` runs small and reports every figure; the generated Structs keep
fewer bytes than the dicts they replace (tracemalloc counts are deterministic)."""

from __future__ import annotations

import argparse
from typing import Any

from bench import models


def test_models_bench_reports_time_and_bytes_per_kind() -> None:
    parser = argparse.ArgumentParser()
    models.add_arguments(parser)
    result = models.run(parser.parse_args(["--objects", "20", "--runs", "1"]))
    candidates: dict[str, Any] = result["candidates"]  # type: ignore[assignment]
    assert {"dict", "msgspec"} <= set(candidates)
    for kind in ("job", "pod"):
        for name in ("dict", "msgspec"):
            assert candidates[name][kind]["decode_us"]["median"] > 0
        typed = candidates["msgspec"][kind]["bytes"]["median"]
        raw = candidates["dict"][kind]["bytes"]["median"]
        assert 0 < typed < 0.85 * raw, (kind, typed, raw)
