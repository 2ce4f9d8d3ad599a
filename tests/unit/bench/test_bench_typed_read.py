"""``python -m bench typed-read`` runs small and reports every figure (not its speed)."""

from __future__ import annotations

import argparse

from bench import typed_read
from cronjob_controller.crd import CronJob
from pyctrl.api import decode


def test_typed_read_reports_each_path_and_the_candidates() -> None:
    parser = argparse.ArgumentParser()
    typed_read.add_arguments(parser)
    result = typed_read.run(parser.parse_args(["--objects", "20", "--repeat", "1",
                                               "--candidates"]))
    assert result["objects"] == 20
    for key in ("raw_get_us", "typed_get_us", "deepcopy_get_us", "status_patch_us"):
        value = result[key]
        assert isinstance(value, float) and value > 0
    candidates = result["decode_only_us"]
    assert isinstance(candidates, dict)
    assert set(candidates) == {"msgspec", "dataclasses", "pydantic"}


def test_the_candidate_decoders_agree_with_msgspec() -> None:
    raw = typed_read.cronjob(1)
    typed = decode(CronJob, raw)
    dc = typed_read._dc_decode(typed_read.DCronJob, raw)
    pyd = typed_read._pydantic_model().model_validate(raw)
    assert typed.spec.schedule == dc.spec.schedule == pyd.spec.schedule
    assert (typed.status.conditions[0].last_transition_time
            == dc.status.conditions[0].last_transition_time
            == pyd.status.conditions[0].last_transition_time)
    assert typed.metadata.labels == dc.metadata.labels == pyd.metadata.labels
