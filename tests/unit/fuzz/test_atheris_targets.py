"""hack/fuzz.py: the atheris targets accept arbitrary inputs, and libFuzzer drives one.

Skipped where atheris is not installed (it is the opt-in ``fuzz`` extra). Subprocesses, so
atheris' import instrumentation never touches the test process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("atheris")

ROOT = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
# Every target on the same few hundred random inputs, without libFuzzer.
EACH_TARGET = f"""
import random, runpy
targets = runpy.run_path({str(ROOT / "hack" / "fuzz.py")!r})["TARGETS"]
rng = random.Random(25)
inputs = [bytes(rng.randrange(256) for _ in range(rng.randrange(64))) for _ in range(300)]
inputs += [b"5\\r\\nhello\\r\\n0\\r\\n\\r\\n", b"*/5 1-3 * jan mon", b"1m30s",
           b'{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{}}}}',
           b"GET /a?b HTTP/1.1\\r\\nContent-Length: 3", b"\\x00HTTP/1.1 200 OK\\r\\n\\r\\nhi"]
for name, target in sorted(targets.items()):
    for data in inputs:
        target(data)
    print(name, len(inputs))
"""


def test_every_target_takes_random_inputs() -> None:
    proc = subprocess.run([sys.executable, "-c", EACH_TARGET], env=ENV, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(line.split()[0] for line in proc.stdout.splitlines()) == [
        "admission", "chunked", "cron", "duration", "request_head", "response"]


def test_libfuzzer_runs_a_target_clean(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "fuzz.py"), "chunked", "-atheris_runs=2000",
         f"-artifact_prefix={tmp_path}/"],
        cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Done 2000" in proc.stderr
    assert not list(tmp_path.glob("crash-*"))
