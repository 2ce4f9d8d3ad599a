"""Built-in kinds: decode time and memory per Job and per Pod for the typed-model candidates.

From the JSON bytes of a realistic Job and Pod as the apiserver returns them (status set,
managedFields stripped: ``bench/fixtures/job.json``, ``pod.json``), per object:

* ``decode_us``: microseconds to decode the bytes (per run, the best of 5 batches of
  ``--objects``/5 decodes; median and min/max over ``--runs`` runs, candidates interleaved
  within a run); ``decode_vs_dict``: the same run's ratio to ``dict`` (robust to the
  machine's load changing between runs);
* ``bytes``: memory the decoded object keeps (tracemalloc, ``--objects`` live objects at
  once, divided by their number; the decoded-from bytes are not counted).

Candidates: ``dict`` (``orjson.loads``, today's cache), ``msgspec`` (the generated
:mod:`pyctrl.models` classes, ``msgspec.json.Decoder(Job).decode``), ``lightkube``
(lightkube-models' dataclasses, ``Job.from_dict(orjson.loads(b))``, which is lazy: it keeps
the dict and converts a nested field on first access; ``lightkube-eager`` converts it all,
``lazy=False``, as reading every field would; only when importable,
e.g. ``pip install --target /tmp/lk lightkube lightkube-models`` and
``--lightkube-path /tmp/lk``; never a dependency).

With ``--mypy`` it also runs ``mypy --strict`` on two reads per candidate: a typo'd field
(``job.spec.template.spec.containerz``: is it an error?) and a correct deep read
(``job.spec.template.spec.containers[0].image``: how many errors, i.e. None checks the user
must write?). docs/DESIGN.md quotes the figures ("Built-in kinds: generated or a package").
"""

from __future__ import annotations

import argparse
import gc
import importlib
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import msgspec
import orjson

from pyctrl.models.batch_v1 import Job
from pyctrl.models.core_v1 import Pod

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ROOT = Path(__file__).resolve().parent.parent
Decode = Callable[[bytes], object]


def fixture(name: str) -> bytes:
    """A fixture's bytes, compact as the apiserver sends them."""
    return orjson.dumps(orjson.loads((FIXTURES / f"{name}.json").read_bytes()))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--objects", type=int, default=2000, help="decodes per run")
    parser.add_argument("--runs", type=int, default=5, help="runs (median and spread)")
    parser.add_argument("--lightkube-path", default="",
                        help="a directory holding lightkube + lightkube-models")
    parser.add_argument("--mypy", action="store_true", help="also check mypy precision")


def candidates(lightkube_path: str) -> dict[str, dict[str, Decode]]:
    """Candidate name -> kind -> decoder from bytes."""
    job = msgspec.json.Decoder(Job)
    pod = msgspec.json.Decoder(Pod)
    out: dict[str, dict[str, Decode]] = {
        "dict": {"job": orjson.loads, "pod": orjson.loads},
        "msgspec": {"job": job.decode, "pod": pod.decode},
    }
    if lightkube_path:
        sys.path.insert(0, lightkube_path)
    try:
        lk_batch = importlib.import_module("lightkube.models.batch_v1")
        lk_core = importlib.import_module("lightkube.models.core_v1")
    except ImportError:
        return out
    lk_job, lk_pod = lk_batch.Job, lk_core.Pod
    out["lightkube"] = {"job": lambda b: lk_job.from_dict(orjson.loads(b)),
                        "pod": lambda b: lk_pod.from_dict(orjson.loads(b))}
    out["lightkube-eager"] = {"job": lambda b: lk_job.from_dict(orjson.loads(b), lazy=False),
                              "pod": lambda b: lk_pod.from_dict(orjson.loads(b), lazy=False)}
    return out


def _time_us(decode: Decode, data: bytes, count: int, batches: int = 5) -> float:
    """Microseconds per decode: the best of ``batches`` batches (a busy machine's
    preemptions land in some batches, not in the best one)."""
    size = max(1, count // batches)
    best = float("inf")
    for _ in range(batches):
        start = time.perf_counter()
        for _ in range(size):
            decode(data)
        best = min(best, (time.perf_counter() - start) / size)
    return best * 1e6


def _bytes_per_object(decode: Decode, data: bytes, count: int) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [decode(data) for _ in range(count)]
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return (after - before - sys.getsizeof(kept)) / len(kept)


def _summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def mypy_precision(lightkube_path: str) -> dict[str, dict[str, object]]:
    """Per candidate: is a typo'd field an error, and how many errors a correct deep read
    gives under ``mypy --strict``."""
    snippets = {
        "dict": ("from typing import Any\nimport orjson\n"
                 "job: dict[str, Any] = orjson.loads(b'{}')\n", 'job["spec"]["template"]'
                 '["spec"]', '["containerz"]', '["containers"][0]["image"]'),
        "msgspec": ("from pyctrl.models.batch_v1 import Job\njob = Job()\n",
                    "job.spec.template.spec", ".containerz", ".containers[0].image"),
        "lightkube": ("from lightkube.models.batch_v1 import Job\njob = Job()\n",
                      "job.spec.template.spec", ".containerz", ".containers[0].image"),
    }
    out: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        env_path = str(ROOT)
        if lightkube_path:  # only lightkube: its neighbours (typing_extensions...) confuse mypy
            (Path(tmp) / "stubs").mkdir()
            (Path(tmp) / "stubs" / "lightkube").symlink_to(Path(lightkube_path) / "lightkube")
            env_path += f":{Path(tmp) / 'stubs'}"
        for name, (head, base, typo, good) in snippets.items():
            if name == "lightkube" and not lightkube_path:
                continue
            counts: dict[str, object] = {}
            for case, tail in (("typo", typo), ("correct", good)):
                path = Path(tmp) / f"{name}_{case}.py"
                path.write_text(f"{head}x = {base}{tail}\nprint(x)\n")
                proc = subprocess.run(
                    [sys.executable, "-m", "mypy", "--strict", "--no-error-summary",
                     "--cache-dir", str(Path(tmp) / ".mypy_cache"), str(path)],
                    capture_output=True, text=True, check=False,
                    env={"MYPYPATH": env_path, "PATH": "/usr/bin:/bin"})
                if proc.returncode not in (0, 1):
                    raise RuntimeError(f"mypy failed on {path.name}: {proc.stderr}")
                line = len(head.splitlines()) + 1  # the read's line; others do not count
                errors = [ln for ln in proc.stdout.splitlines()
                          if f"{path.name}:{line}: error:" in ln]
                counts[case] = len(errors)
            out[name] = {"typo_is_error": bool(counts["typo"]),
                         "correct_read_errors": counts["correct"]}
    return out


def run(args: argparse.Namespace) -> dict[str, object]:
    cands = candidates(args.lightkube_path)
    data = {"job": fixture("job"), "pod": fixture("pod")}
    times: dict[str, dict[str, list[float]]] = {c: {"job": [], "pod": []} for c in cands}
    mem: dict[str, dict[str, list[float]]] = {c: {"job": [], "pod": []} for c in cands}
    for _ in range(args.runs):
        for kind, raw in data.items():
            for name, decoders in cands.items():
                times[name][kind].append(_time_us(decoders[kind], raw, args.objects))
                mem[name][kind].append(_bytes_per_object(decoders[kind], raw, args.objects))
    result: dict[str, object] = {
        "objects": args.objects, "runs": args.runs,
        "json_bytes": {k: len(v) for k, v in data.items()},
        "candidates": {name: {kind: {
            "decode_us": _summary(times[name][kind]),
            "decode_vs_dict": _summary([t / d for t, d in zip(times[name][kind],
                                                              times["dict"][kind],
                                                              strict=True)]),
            "bytes": _summary(mem[name][kind])} for kind in data} for name in cands},
    }
    if args.mypy:
        result["mypy"] = mypy_precision(args.lightkube_path)
    return result
