"""Run the sample controller: ``python -m examples.sample_controller [--kubeconfig PATH]``."""

from __future__ import annotations

import argparse
import sys
import threading

from examples.sample_controller.controller import setup
from pyctrl import (
    HealthOptions,
    LeaderElectionLost,
    LeaderElectionOptions,
    Manager,
    ManagerOptions,
    MetricsOptions,
    RESTClient,
    configure_logging,
    get_logger,
    install_signal_handlers,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sample-controller")
    parser.add_argument("--kubeconfig", default=None)
    parser.add_argument("--leader-elect", action="store_true")
    parser.add_argument("--leader-election-namespace", default="default")
    parser.add_argument("--metrics-bind-address", default=":8080")
    parser.add_argument("--health-probe-bind-address", default=":8081")
    parser.add_argument("--log-format", choices=["json", "console"], default="json")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    configure_logging(args.log_format)
    election = (LeaderElectionOptions(id="sample-controller",
                                      namespace=args.leader_election_namespace)
                if args.leader_elect else None)
    manager = Manager(RESTClient.from_kubeconfig(args.kubeconfig), ManagerOptions(
        leader_election=election,
        metrics=MetricsOptions(bind_address=args.metrics_bind_address),
        health=HealthOptions(bind_address=args.health_probe_bind_address),
        component="sample-controller",
    ))
    setup(manager, workers=args.workers)
    stop = threading.Event()
    install_signal_handlers(stop)
    try:
        manager.run(stop)
    except LeaderElectionLost:
        get_logger(__name__).error("leader election lost; exiting")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
