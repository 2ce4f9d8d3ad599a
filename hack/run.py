"""`make run`: run the CronJob controller end to end, on a throwaway local control plane.

* By default, always a local control plane (pyctrl.testing.envtest in pods mode: etcd,
  kube-apiserver, kube-controller-manager for garbage collection and Jobs, kube-scheduler,
  and kwok playing the kubelet of two fake nodes), whatever $KUBECONFIG or ~/.kube/config
  point at: a production context never gets the CRD or a running controller by accident.
  The CRD and the sample CronJob (manifests/samples/) are installed and the controller runs
  in the foreground. Jobs' pods "run" on kwok for as long as their template's annotations
  say (docs/OPERATOR.md, "Jobs that run under make run") and end Succeeded or Failed, so
  Jobs complete and history limits delete old ones. A live view prints what it waits for
  ("waiting for the first run at HH:MM:SS") and each Job as the API server reports it:
  created, Complete or Failed, deleted.
* `make run CONTEXT=name` (``--context NAME``, optionally ``--kubeconfig PATH``) runs against
  that kubeconfig context of a real cluster instead: the server and context are printed
  first, then the CRD is applied and the controller runs there (no sample is installed).
* /metrics (plain HTTP) and the probes listen on free ports of 127.0.0.1, printed at start,
  so two `make run` can run side by side.
* Ctrl-C stops within about 3 s: the controller gets a 1 s graceful shutdown, then the local
  control plane is killed at once (its data is throwaway) and its files are removed.

The control plane (or context) and the CRD install are ``python -m pyctrl run``'s
(:class:`pyctrl.cli.devrun.DevCluster`); this script adds the sample, the live view and the
CronJob controller's own command line (its flags: workers, leader election, webhook, ...).

Other arguments are passed to the controller (``python -m cronjob_controller``).
"""

from __future__ import annotations

import argparse
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cronjob_controller import api, schedule  # noqa: E402
from cronjob_controller.__main__ import main as controller_main  # noqa: E402
from pyctrl import RESTClient  # noqa: E402
from pyctrl.cli import UsageError  # noqa: E402
from pyctrl.cli.devrun import DevCluster, free_ports, say  # noqa: E402
from pyctrl.kube import JOBS  # noqa: E402
from pyctrl.testing.envtest.binaries import find_binaries  # noqa: E402

NAMESPACE = "default"


def next_runs(client: RESTClient, now: datetime) -> list[tuple[datetime, str]]:
    """(next scheduled time, "ns/name") of every valid, unsuspended CronJob in NAMESPACE."""
    out = []
    for obj in client.list(api.CRONJOBS, NAMESPACE).get("items") or []:
        cronjob, errors = api.parse(obj)
        if cronjob is None or errors or api.validate(cronjob):
            continue
        if cronjob.spec.suspend:
            continue
        zone = api.load_zone(cronjob.spec.time_zone)
        anchor = (cronjob.status.last_schedule_time or cronjob.metadata.creation_timestamp
                  or now)
        nxt = schedule.parse(cronjob.spec.schedule, zone).next_after(now, anchor=anchor)
        if nxt is not None:
            out.append((nxt, f"{NAMESPACE}/{cronjob.metadata.name}"))
    return sorted(out)


def say_waiting(client: RESTClient, first: bool,
                announced: datetime | None = None) -> datetime | None:
    """Say when the next run is, unless that is ``announced`` already (the Jobs of one tick
    each bring the view here); returns the time said."""
    try:
        runs = next_runs(client, datetime.now(UTC))
    except Exception as err:  # the live view must never take the controller down
        say(f"(could not compute the next run: {err})")
        return announced
    if not runs or runs[0][0] == announced:
        return announced
    when, name = runs[0]
    local = when.astimezone().strftime("%H:%M:%S")
    say(f"waiting for the {'first' if first else 'next'} run at {local} ({name})")
    return when


def job_outcome(job: dict[str, Any]) -> tuple[str, str] | None:
    """("Complete" or "Failed", when) once the Job has that condition."""
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return str(cond["type"]), str(cond.get("lastTransitionTime"))
    return None


def show_job_event(event: dict[str, Any], finished: set[str]) -> bool:
    """Print a Job's creation, end (once) and deletion; True for a creation."""
    obj = event.get("object") or {}
    meta = obj.get("metadata") or {}
    key = f"{meta.get('namespace')}/{meta.get('name')}"
    kind = event.get("type")
    if kind == "ADDED":
        print(f">>> Job created: {key} at {meta.get('creationTimestamp')}", flush=True)
    outcome = job_outcome(obj) if kind in ("ADDED", "MODIFIED") else None
    if outcome is not None and key not in finished:
        finished.add(key)
        print(f">>> Job {outcome[0]}: {key} at {outcome[1]}", flush=True)
    if kind == "DELETED":
        finished.discard(key)
        print(f">>> Job deleted: {key}", flush=True)
    return kind == "ADDED"


def show_jobs(kubeconfig: str, stop: threading.Event) -> None:
    """Print what the controller is waiting for, then every Job the API server reports."""
    client = RESTClient.from_kubeconfig(kubeconfig)
    finished: set[str] = set()
    try:
        rv = client.list(JOBS, NAMESPACE)["metadata"].get("resourceVersion")
        announced = say_waiting(client, first=True)
        while not stop.is_set():
            try:
                stream = client.watch(JOBS, NAMESPACE, resource_version=rv, timeout_seconds=60)
                for event in stream:
                    obj = event.get("object") or {}
                    rv = obj.get("metadata", {}).get("resourceVersion", rv)
                    if show_job_event(event, finished):
                        announced = say_waiting(client, first=False, announced=announced)
                    if stop.is_set():
                        stream.close()
                        break
            except Exception:
                if stop.wait(2.0):
                    break
    except Exception as err:
        if not stop.is_set():
            say(f"live view stopped: {err}")
    finally:
        client.close()


def run_on_context(context: str, kubeconfig: str | None, args: list[str]) -> int:
    try:
        with DevCluster([ROOT / "crds"], context=context, kubeconfig=kubeconfig) as cluster:
            return controller_main([*cluster.client_flags, *args])
    except UsageError as err:
        print(f"run: error: {err}", file=sys.stderr)
        return 2


def run_local(args: list[str]) -> int:
    stop = threading.Event()
    # KUBEBUILDER_ASSETS from setup-envtest has no kube-scheduler or kwok: run without pods
    # (Jobs are created, never run) rather than refuse to start.
    found = find_binaries()
    pods = None not in (found.kube_scheduler, found.kwok, found.kwok_stages)
    with DevCluster([ROOT / "crds"], pods=pods,
                    hint="make run CONTEXT=name runs against a real cluster instead") as cluster:
        try:
            cluster.kubectl("apply", "-f", str(ROOT / "manifests" / "samples"))
            say(f"try: kubectl --kubeconfig {cluster.kubeconfig_path} get pcj,jobs -A")
            if pods:
                say("the sample CronJob runs every minute, its pods run 20 s on kwok's fake "
                    "nodes; Ctrl-C to stop")
            else:
                say("the sample CronJob runs every minute; no kube-scheduler/kwok in "
                    f"{found.directory}, so its Jobs' pods never run (hack/controlplane/"
                    "build.sh builds them); Ctrl-C to stop")
            viewer = threading.Thread(target=show_jobs, args=(cluster.kubeconfig_path, stop),
                                      name="job-viewer", daemon=True)
            viewer.start()
            return controller_main(["--kubeconfig", cluster.kubeconfig_path, *args])
        finally:
            stop.set()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hack/run.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--context", default=None,
                        help="run against this kubeconfig context of a real cluster "
                             "(default: a local control plane)")
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig for --context (default: $KUBECONFIG, ~/.kube/config)")
    opts, rest = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    metrics_port, probe_port = free_ports(2)
    say(f"metrics: http://127.0.0.1:{metrics_port}/metrics  "
        f"probes: http://127.0.0.1:{probe_port}/healthz, /readyz")
    args = ["--log-format", "console",
            "--metrics-bind-address", f"127.0.0.1:{metrics_port}", "--metrics-secure=false",
            "--health-probe-bind-address", f"127.0.0.1:{probe_port}",
            "--graceful-shutdown-timeout", "1s", *rest]
    if opts.context:
        return run_on_context(opts.context, opts.kubeconfig, args)
    return run_local(args)


if __name__ == "__main__":
    sys.exit(main())
