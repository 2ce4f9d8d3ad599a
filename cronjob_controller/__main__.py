"""``python -m cronjob_controller``: run the controller, or the ``next``/``trigger`` helpers.

Contract: this module only parses flags and wires parts together (``wiring.build``); all
behaviour lives in the modules it calls. Exit codes (``EPILOG``, shown by ``--help``): 0 after
a graceful stop, 1 for a runtime failure, 3 when leader election was lost (the pod restarts and
rejoins as a standby), 2 for bad flags, input or configuration (an unreadable kubeconfig, or
a missing or unreadable ``--webhook-cert-dir`` when the webhook is enabled).
With ``--webhook-bind-address`` the admission webhook runs as a Manager runnable on every
replica and is part of ``/readyz``. With ``--sharding`` every replica reconciles its own
share of the CronJobs (``pyctrl.sharding``): it holds the shard Lease
``cronjob-shard-<--shard-id>`` next to the leader Lease (implied).

* ``python -m cronjob_controller [flags]``: the controller (``run`` may be given explicitly).
* ``python -m cronjob_controller next NAME [-n NS] [--count 5]``: the next run times of a
  CronJob, in its time zone.
* ``python -m cronjob_controller trigger NAME [-n NS]``: a Job from the CronJob's template now
  (``kubectl create job --from=cronjob/NAME``), handed to the CronJob's shard under
  ``--sharding`` (:mod:`cronjob_controller.manual`).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Sequence
from typing import Literal, cast

import structlog
from prometheus_client import CollectorRegistry

from cronjob_controller import api, manual, schedule
from cronjob_controller.templatecheck import DRY_RUN_TIMEOUT_SECONDS
from cronjob_controller.webhook import handlers
from cronjob_controller.webhook import server as webhook_server
from cronjob_controller.wiring import CONTROLLER_NAME, build
from pyctrl import (
    GCOptions,
    HealthOptions,
    LeaderElectionLost,
    LeaderElectionOptions,
    Manager,
    ManagerOptions,
    MetricsOptions,
    RealClock,
    configure_logging,
    install_signal_handlers,
)
from pyctrl.duration import duration_arg
from pyctrl.errors import ApiError, NotFound
from pyctrl.kube import JOBS, Client, ConfigError, RESTClient
from pyctrl.leaderelection import default_identity
from pyctrl.serving import serving_context
from pyctrl.sharding import Sharding, ShardingOptions
from pyctrl.webhook import WebhookServer, WebhookServerOptions

__all__ = ["build_parser", "main"]

log = structlog.get_logger("cronjob_controller")

# No client-side limit by default (docs/DESIGN.md, "The CronJob operator: typed, and its
# numbers"); --qps N (> 0) turns the limiter back on, --burst its bucket.
DEFAULT_QPS = 0.0
DEFAULT_BURST = 100
# The sharding leader's share of the CronJobs against another replica's (it also runs the
# sharder): see docs/OPERATOR.md, Sharding, for the figures behind the value.
DEFAULT_SHARD_LEADER_WEIGHT = 1.0

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_LEADERSHIP_LOST = 0, 1, 2, 3
EPILOG = """\
durations: 15s, 1m30s, 500ms, 1h (Go syntax, as kube-controller-manager) or plain seconds.

exit codes:
  0  stopped cleanly (SIGTERM/SIGINT)
  1  runtime failure
  2  usage or configuration error (bad flag, unreadable kubeconfig, unknown context)
  3  leader election lost (restart to rejoin as a standby)
"""


def _bool_arg(text: str) -> bool:
    value = text.strip().lower()
    if value in ("true", "1", "yes", "on"):
        return True
    if value in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _add_connection_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig path (default: $KUBECONFIG, ~/.kube/config, or the "
                             "in-cluster service account when running in a pod)")
    parser.add_argument("--context", default=None, help="kubeconfig context to use")
    parser.add_argument("--qps", type=float, default=DEFAULT_QPS,
                        help="client-side requests per second to the API server; 0 (the "
                             "default) for no client-side limit: the server's API Priority "
                             "and Fairness paces the controller and 429 answers are retried "
                             "after their Retry-After")
    parser.add_argument("--burst", type=int, default=DEFAULT_BURST,
                        help="client-side burst above --qps (only with --qps > 0; default "
                             f"{DEFAULT_BURST})")


def build_parser() -> argparse.ArgumentParser:
    """The flags of the controller itself (the ``run`` command)."""
    parser = argparse.ArgumentParser(
        prog="python -m cronjob_controller",
        description="Run the batch.pyctrl.io/v1 CronJob controller. Subcommands: "
                    "'next NAME' and 'trigger NAME' (see --help of each).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_connection_flags(parser)
    parser.add_argument("--namespace", action="append", default=[], metavar="NS",
                        help="watch only this namespace (repeatable; default: all)")
    parser.add_argument("--workers", type=int, default=16,
                        help="concurrent reconciles (worker threads)")
    parser.add_argument("--leader-elect", action="store_true",
                        help="run leader election so only one replica acts at a time")
    parser.add_argument("--leader-elect-namespace",
                        default=os.environ.get("POD_NAMESPACE", "default"),
                        help="namespace of the leader election Lease")
    parser.add_argument("--leader-elect-name", default="pyctrl-cronjob-controller",
                        help="name of the leader election Lease")
    parser.add_argument("--leader-elect-lease-duration", type=duration_arg, default=15.0,
                        help="how long a standby waits after the last renew before taking "
                             "over (default 15s)")
    parser.add_argument("--leader-elect-renew-deadline", type=duration_arg, default=10.0,
                        help="how long the leader keeps trying to renew before stepping down "
                             "(default 10s)")
    parser.add_argument("--leader-elect-retry-period", type=duration_arg, default=2.0,
                        help="time between leader election attempts (default 2s)")
    parser.add_argument("--sharding", action="store_true",
                        help="active-active: every replica reconciles the CronJobs labelled "
                             "for its shard; the leader (--leader-elect is implied) assigns "
                             "them (see docs/OPERATOR.md, Sharding)")
    parser.add_argument("--shard-id",
                        default=(os.environ.get("POD_NAME") or os.uname().nodename).lower(),
                        help="this replica's shard name (default: $POD_NAME, else the host "
                             "name)")
    parser.add_argument("--shard-leader-weight", type=float,
                        default=DEFAULT_SHARD_LEADER_WEIGHT, metavar="W",
                        help="with --sharding: the leader's share of the CronJobs relative "
                             "to another replica's, in (0, 1]; it also runs the sharder "
                             "(default %(default)s)")
    parser.add_argument("--metrics-bind-address", default=":8443",
                        help="host:port for /metrics ('0' disables)")
    parser.add_argument("--metrics-secure", type=_bool_arg, nargs="?", const=True,
                        default=True, metavar="BOOL",
                        help="serve /metrics over HTTPS, only to callers whose bearer token "
                             "may 'get' the /metrics nonResourceURL (TokenReview + "
                             "SubjectAccessReview); --metrics-secure=false for plain HTTP "
                             "(default true)")
    parser.add_argument("--metrics-cert-dir", default=None,
                        help="directory with tls.crt and tls.key for /metrics (default: a "
                             "self-signed certificate generated at start)")
    parser.add_argument("--health-probe-bind-address", default=":8081",
                        help="host:port for /healthz and /readyz ('0' disables)")
    parser.add_argument("--webhook-bind-address", default="0",
                        help="host:port for the admission webhook ('0' disables)")
    parser.add_argument("--webhook-cert-dir", default="/tmp/k8s-webhook-server/serving-certs",
                        help="directory with tls.crt and tls.key for the webhook")
    parser.add_argument("--graceful-shutdown-timeout", type=duration_arg, default=30.0,
                        help="how long in-flight reconciles get to finish on shutdown "
                             "(default 30s)")
    parser.add_argument("--watch-list", type=_bool_arg, nargs="?", const=True, default=False,
                        metavar="BOOL",
                        help="sync the caches by streaming lists (WatchList, as client-go "
                             "v0.35 and kube-controller-manager 1.35 do) instead of paged "
                             "LISTs; falls back to LISTs where the API server cannot "
                             "(default false)")
    parser.add_argument("--gc-freeze", type=_bool_arg, nargs="?", const=True, default=True,
                        metavar="BOOL",
                        help="once the caches synced, run one full garbage collection and "
                             "gc.freeze() so later collections skip the cached objects "
                             "(default true)")
    parser.add_argument("--gc-gen0-threshold", type=int, default=None, metavar="N",
                        help="Python's first-generation GC threshold, set once the caches "
                             "synced (default: Python's, 700)")
    parser.add_argument("--log-format", choices=("json", "console"), default="json")
    parser.add_argument("--log-level", default="info",
                        choices=("debug", "info", "warning", "error"))
    return parser


def _helper_parser(command: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m cronjob_controller {command}")
    parser.add_argument("name", help="CronJob name")
    parser.add_argument("-n", "--namespace", default="default")
    _add_connection_flags(parser)
    if command == "next":
        parser.add_argument("--count", type=int, default=5, help="how many run times to show")
    return parser


def _client(args: argparse.Namespace, registry: CollectorRegistry | None = None) -> RESTClient:
    return RESTClient.from_kubeconfig(args.kubeconfig, args.context, qps=args.qps,
                                      burst=args.burst, user_agent="pyctrl-cronjob-controller",
                                      registry=registry)


def _webhook(args: argparse.Namespace,
             dry_run_client: Client | None = None) -> WebhookServer | None:
    """The admission webhook server with its certificate loaded, or None when disabled.

    With ``dry_run_client`` the validating handler also dry-runs the template's Job
    (:func:`cronjob_controller.webhook.handlers`).

    Raises ValueError (a CertificateError naming the path for a missing or unreadable
    certificate directory) so ``run`` exits with status 2 before anything starts.
    """
    from pyctrl.serving import parse_bind_address

    bind = parse_bind_address(args.webhook_bind_address)
    if bind is None:
        return None
    server = webhook_server(WebhookServerOptions(cert_dir=args.webhook_cert_dir, host=bind[0],
                                                 port=bind[1]), handlers(dry_run_client))
    server.certs.load()
    return server


def _check_crd(client: RESTClient, namespaces: Sequence[str]) -> None:
    """Say how to install the CronJob CRD when the API server does not serve it (the
    informers keep retrying with backoff and /readyz stays false until it appears)."""
    try:
        client.list(api.CRONJOBS, namespaces[0] if namespaces else None, limit=1)
    except NotFound:
        log.error("the CronJob resource is not served by the API server: install its "
                  "CustomResourceDefinition with `kubectl apply -f crds/`; waiting for it",
                  group=api.CRONJOBS.group, version=api.CRONJOBS.version,
                  resource=api.CRONJOBS.plural)
    except Exception:  # anything else is the informers' to report (and retry)
        return


def run(args: argparse.Namespace) -> int:
    """Run the controller until SIGTERM/SIGINT (see module docstring for exit codes)."""
    configure_logging(cast(Literal["json", "console"], args.log_format), args.log_level)
    if args.workers < 1:
        print("error: --workers must be at least 1", file=sys.stderr)
        return 2
    if args.gc_gen0_threshold is not None and args.gc_gen0_threshold < 1:
        print("error: --gc-gen0-threshold must be at least 1", file=sys.stderr)
        return 2
    try:
        webhook = _webhook(args)  # certificate problems first, before any kubeconfig
    except ValueError as err:
        print(f"error: webhook: {err}", file=sys.stderr)
        return EXIT_USAGE
    if args.metrics_secure and args.metrics_cert_dir:
        try:
            serving_context(args.metrics_cert_dir)  # fail now, not in the metrics thread
        except (OSError, ValueError) as err:
            print(f"error: --metrics-cert-dir: {err}", file=sys.stderr)
            return EXIT_USAGE
    registry = CollectorRegistry()  # one registry: REST client, manager and controller metrics
    dry_run_client: RESTClient | None = None
    try:
        client = _client(args, registry)
        if webhook is not None:
            # The webhook's dry runs: a short timeout, no retries (templatecheck.py).
            dry_run_client = RESTClient.from_kubeconfig(
                args.kubeconfig, args.context, timeout=DRY_RUN_TIMEOUT_SECONDS,
                max_retries=0, user_agent="pyctrl-cronjob-webhook")
            webhook = _webhook(args, dry_run_client)
    except (ConfigError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    identity = default_identity()
    election: LeaderElectionOptions | None = None
    sharding: ShardingOptions | None = None
    if args.sharding:
        try:
            sharding = ShardingOptions(
                controller=CONTROLLER_NAME, shard_id=args.shard_id, resource=api.CRONJOBS,
                lease_namespace=args.leader_elect_namespace, namespaces=tuple(args.namespace),
                owned=(JOBS,), lease_duration=args.leader_elect_lease_duration,
                renew_deadline=args.leader_elect_renew_deadline,
                retry_period=args.leader_elect_retry_period,
                leader_weight=args.shard_leader_weight)
        except ValueError as err:
            print(f"error: --sharding: {err}", file=sys.stderr)
            return EXIT_USAGE
    if args.leader_elect or sharding is not None:
        election = LeaderElectionOptions(
            id=args.leader_elect_name, namespace=args.leader_elect_namespace, identity=identity,
            lease_duration=args.leader_elect_lease_duration,
            renew_deadline=args.leader_elect_renew_deadline,
            retry_period=args.leader_elect_retry_period,
        )
    options = ManagerOptions(
        leader_election=election,
        metrics=MetricsOptions(bind_address=args.metrics_bind_address,
                               secure=args.metrics_secure, cert_dir=args.metrics_cert_dir),
        health=HealthOptions(bind_address=args.health_probe_bind_address),
        graceful_shutdown_timeout=args.graceful_shutdown_timeout,
        component="cronjob-controller",
        gc=GCOptions(freeze_after_sync=args.gc_freeze, gen0_threshold=args.gc_gen0_threshold),
        watch_list=args.watch_list,
    )
    manager = Manager(client, options, registry=registry)
    if sharding is not None:
        manager.add_extension(Sharding(sharding))
    build(manager, namespaces=args.namespace, workers=args.workers)
    _check_crd(client, args.namespace)
    if webhook is not None:
        manager.add(webhook)
        manager.add_readyz_check("webhook", webhook.check)
    stop = threading.Event()
    restore = install_signal_handlers(stop)
    log.info("starting cronjob controller", identity=identity, workers=args.workers,
             namespaces=args.namespace or "all", leader_elect=args.leader_elect,
             shard=sharding.shard_id if sharding else None)
    try:
        manager.run(stop)
    except LeaderElectionLost:
        log.error("leader election lost; exiting so the pod restarts as a standby")
        return EXIT_LEADERSHIP_LOST
    except Exception:
        log.exception("controller failed")
        return EXIT_FAILURE
    finally:
        stop.set()
        client.close()
        if dry_run_client is not None:
            dry_run_client.close()
        restore()
    return 0


def next_times(args: argparse.Namespace) -> int:
    """Print the next ``--count`` run times of a CronJob in its own time zone."""
    client = _client(args)
    try:
        obj = client.get(api.CRONJOBS, args.name, args.namespace)
    except NotFound:
        print(f"error: cronjob {args.namespace}/{args.name} not found", file=sys.stderr)
        return 2
    cronjob, errors = api.parse(obj)
    if cronjob is not None:
        errors = [*errors, *api.validate(cronjob)]
    if cronjob is None or errors:
        print("error: the CronJob is invalid: " + "; ".join(map(str, errors)), file=sys.stderr)
        return 2
    zone = api.load_zone(cronjob.spec.time_zone)
    sched = schedule.parse(cronjob.spec.schedule, zone)
    now = RealClock().now()
    anchor = cronjob.status.last_schedule_time or cronjob.metadata.creation_timestamp or now
    t = now
    print(f"# {args.namespace}/{args.name}: {cronjob.spec.schedule!r} in "
          f"{cronjob.spec.time_zone or 'UTC'}" + (" (suspended)" if cronjob.spec.suspend else ""))
    for _ in range(args.count):
        nxt = sched.next_after(t, anchor=anchor)
        if nxt is None:
            break
        print(api.format_rfc3339(nxt.astimezone(zone)))
        t = nxt
    return 0


def trigger(args: argparse.Namespace) -> int:
    """Create a Job from the CronJob's template now (a manual run; :mod:`.manual`)."""
    client = _client(args)
    try:
        obj = client.get(api.CRONJOBS, args.name, args.namespace)
    except NotFound:
        print(f"error: cronjob {args.namespace}/{args.name} not found", file=sys.stderr)
        return 2
    try:
        made = manual.run_now(client, obj, RealClock().now())
    except ApiError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"job.batch/{made.job} created")
    if made.handover == "failed":
        print(f"warning: could not list job {made.job} on cronjob {args.namespace}/{args.name} "
              f"for its shard ({made.error}); the sharder's sweep hands it over within its "
              "resync (30s)", file=sys.stderr)
    elif made.handover == "gone":
        print(f"warning: cronjob {args.namespace}/{args.name} was deleted meanwhile; its job "
              "is garbage collected with it", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("next", "trigger"):
        args = _helper_parser(argv[0]).parse_args(argv[1:])
        return next_times(args) if argv[0] == "next" else trigger(args)
    if argv and argv[0] == "run":
        argv = argv[1:]
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
