"""``python -m bench object-model`` runs small, reports every form, and its forms decode the
same object (not its speed)."""

from __future__ import annotations

import argparse

from bench import object_model
from pyctrl.kube import meta


def test_every_form_reports_decode_time_memory_and_key_reads() -> None:
    parser = argparse.ArgumentParser()
    object_model.add_arguments(parser)
    result = object_model.run(parser.parse_args(["--objects", "20", "--runs", "1"]))
    forms = {"dict", "typed", "unstructured", "meta-dict", "meta-unstructured", "meta-typed"}
    assert forms <= set(result)
    for form in forms:
        row = result[form]
        assert isinstance(row, dict) and set(row) == {"configmap", "job"}
        for figures in row.values():
            assert figures["decode_us"] > 0 and figures["bytes"] > 0 and figures["key_us"] > 0


def test_the_forms_decode_the_same_object() -> None:
    for kinds in object_model.forms().values():
        for decode, data in kinds.values():
            obj = decode(data)
            assert meta.name(obj) in ("app-config", "backup-29400480")  # type: ignore[arg-type]
            assert meta.namespace(obj) in ("web", "ops")  # type: ignore[arg-type]
