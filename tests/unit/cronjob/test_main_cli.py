"""``python -m cronjob_controller``: duration flags, secure-metrics flags, exit codes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cronjob_controller.__main__ import EPILOG, build_parser

ROOT = Path(__file__).resolve().parents[3]


def test_duration_flags_take_go_durations_and_plain_seconds() -> None:
    args = build_parser().parse_args([
        "--leader-elect-lease-duration", "1m30s", "--leader-elect-renew-deadline", "15s",
        "--leader-elect-retry-period", "500ms", "--graceful-shutdown-timeout", "3"])
    assert (args.leader_elect_lease_duration, args.leader_elect_renew_deadline,
            args.leader_elect_retry_period, args.graceful_shutdown_timeout) == (
        90.0, 15.0, 0.5, 3.0)


def test_metrics_are_secure_by_default_and_can_be_turned_off() -> None:
    parser = build_parser()
    assert parser.parse_args([]).metrics_secure is True
    assert parser.parse_args([]).metrics_bind_address == ":8443"
    assert parser.parse_args(["--metrics-secure"]).metrics_secure is True
    assert parser.parse_args(["--metrics-secure=false"]).metrics_secure is False
    assert parser.parse_args(["--metrics-cert-dir", "/certs"]).metrics_cert_dir == "/certs"


def test_no_client_side_rate_limit_by_default_and_flags_turn_it_on() -> None:
    """Issue 25 item 4: the server's APF paces the controller and 429s are retried after
    Retry-After; --qps N (> 0) brings back a client-side token bucket of --burst tokens."""
    parser = build_parser()
    default = parser.parse_args([])
    assert (default.qps, default.burst) == (0.0, 100)
    assert "no client-side limit" in " ".join(parser.format_help().split())
    limited = parser.parse_args(["--qps", "50", "--burst", "100"])
    assert (limited.qps, limited.burst) == (50.0, 100)


def test_help_documents_exit_codes_and_durations() -> None:
    text = build_parser().format_help()
    assert EPILOG.splitlines()[0] in text
    for line in ("0  stopped cleanly", "1  runtime failure", "2  usage or configuration error",
                 "3  leader election lost"):
        assert line in text


def _run(*argv: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path),
           "KUBECONFIG": str(tmp_path / "none")}
    return subprocess.run([sys.executable, "-m", "cronjob_controller", *argv], env=env,
                          capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          check=False)


@pytest.mark.parametrize("argv", [
    ["--leader-elect-lease-duration", "fifteen"],
    ["--graceful-shutdown-timeout", "-5s"],
    ["--metrics-secure=maybe"],
    ["--no-such-flag"],
])
def test_bad_flags_exit_2(argv: list[str], tmp_path: Path) -> None:
    done = _run(*argv, tmp_path=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "usage:" in done.stderr


def test_unreadable_kubeconfig_exits_2_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "kubeconfig"
    done = _run("--kubeconfig", str(missing), tmp_path=tmp_path)
    assert done.returncode == 2, done.stderr
    assert str(missing) in done.stderr and "Traceback" not in done.stderr


def test_missing_metrics_cert_dir_exits_2_naming_the_file(tmp_path: Path) -> None:
    done = _run("--metrics-cert-dir", str(tmp_path / "certs"), tmp_path=tmp_path)
    assert done.returncode == 2, done.stderr
    assert str(tmp_path / "certs" / "tls.crt") in done.stderr
    assert "Traceback" not in done.stderr


def test_unusable_metrics_certificate_exits_2(tmp_path: Path) -> None:
    certs = tmp_path / "certs"
    certs.mkdir()
    (certs / "tls.crt").write_text("not a certificate\n")
    (certs / "tls.key").write_text("not a key\n")
    done = _run("--metrics-cert-dir", str(certs), tmp_path=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "metrics serving certificate" in done.stderr and "Traceback" not in done.stderr
