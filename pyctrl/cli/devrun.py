"""``python -m pyctrl run MODULE:setup [--crd PATH]... [--apply PATH]... [--context NAME]
[--kubeconfig PATH] [--pods] [--namespace NS] [--log-level L]``: the dev loop in one command.

Contract:

* Without ``--context`` a throwaway local control plane is started
  (:class:`pyctrl.testing.envtest.ControlPlane`: etcd, kube-apiserver, kube-controller-manager
  for garbage collection; with ``--pods`` also kube-scheduler and kwok running Jobs' pods on
  fake nodes), whatever ``$KUBECONFIG`` points at: a production context never gets anything
  by accident. Its kubeconfig path is printed. With ``--context NAME`` (of ``--kubeconfig``,
  default ``$KUBECONFIG``/``~/.kube/config``) that cluster is used and its server is printed
  first.
* The CRDs in ``--crd`` files/directories are installed (server-side apply on a context) and
  waited for until Established and served; then ``--apply`` manifests (samples) are applied.
* ``setup(manager)`` builds the controllers on a :class:`pyctrl.Manager` over that cluster
  (console logs; /metrics over plain HTTP and the probes on free 127.0.0.1 ports, printed;
  ``--namespace``: the manager's scope) and the manager runs in the foreground.
* Ctrl-C (SIGINT) or SIGTERM stops it: the controllers get a 1 s graceful shutdown, then the
  local control plane is SIGKILLed (its data is throwaway) and its files removed; a second
  Ctrl-C exits at once. Exit status 0 after a clean stop, 1 if the manager failed, 2 for a
  usage error (unknown context, unimportable setup, a ``--crd`` or ``--apply`` file that is
  not YAML, a ``--crd`` document that is not a CustomResourceDefinition, no control-plane
  binaries for a local run: one line naming ``pyctrl envtest install`` and ``--context``):
  usage errors are found before anything starts, and printed as one line, never a traceback.
  The binaries are looked up as :func:`pyctrl.testing.envtest.find_binaries` does, never
  built here.

:class:`DevCluster` (the control plane or context, with CRDs installed) and
:func:`free_ports` are what ``make run`` (hack/run.py) reuses around the CronJob controller's
own command line.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import subprocess
import sys
import threading
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyctrl.cli import UsageError

if TYPE_CHECKING:
    from pyctrl.testing.envtest import Binaries, ControlPlane

__all__ = ["DevCluster", "add_arguments", "check_crds", "free_ports", "run", "say"]


def say(message: str) -> None:
    """One line of the dev loop's own output (``run: ...``), flushed at once."""
    print(f"run: {message}", flush=True)


def free_ports(count: int) -> list[int]:
    """``count`` distinct free TCP ports on 127.0.0.1 (held together while picking)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class DevCluster:
    """A local throwaway control plane, or a kubeconfig context, with the CRDs installed
    (a context manager; see module docstring). ``hint`` ends the local-start message (how to
    use a real cluster instead)."""

    def __init__(self, crds: Sequence[Path | str] = (), *, context: str | None = None,
                 kubeconfig: str | None = None, pods: bool = False,
                 hint: str = "--context NAME runs against a real cluster instead") -> None:
        self.crds = [Path(p) for p in crds]
        self.context = context
        self.pods = pods
        self.hint = hint
        self.kubeconfig_path = kubeconfig or ""
        self.server = ""
        self._cp: ControlPlane | None = None  # imported only for a local run

    @property
    def local(self) -> bool:
        return self.context is None

    @property
    def client_flags(self) -> list[str]:
        """``--kubeconfig``/``--context`` flags reaching this cluster."""
        flags = ["--kubeconfig", self.kubeconfig_path] if self.kubeconfig_path else []
        return flags + (["--context", self.context] if self.context else [])

    def __enter__(self) -> DevCluster:
        if self.context is not None:
            self._use_context(self.context)
        else:
            self._start_local()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: types.TracebackType | None) -> None:
        cp = self._cp
        if cp is None:
            return
        say("stopping the local control plane")
        # At once: its data is throwaway, and a graceful kube-apiserver stop takes seconds.
        cp.kill()
        self._cp = None
        say("stopped")

    def _use_context(self, context: str) -> None:
        from pyctrl.kube import ConfigError, load_config

        try:
            config = load_config(self.kubeconfig_path or None, context)
        except ConfigError as err:
            raise UsageError(str(err)) from None
        self.server = config.host
        _reachable(config.host, context=config.context,
                   proxied=bool(getattr(config.configuration, "proxy", None)))
        say(f"using the REAL cluster of context {config.context!r}: server {config.host} "
            f"(kubeconfig {config.source})")
        if self.crds:
            files = [a for p in self.crds for a in ("-f", str(p))]
            say(f"installing the CRDs (kubectl apply --server-side {' '.join(files)})")
            self.kubectl("apply", "--server-side", "--force-conflicts", *files)
            self.kubectl("wait", "--for=condition=Established", "--timeout=60s", *files)

    def _start_local(self) -> None:
        from pyctrl.testing.envtest import ControlPlane

        binaries = self._binaries()
        parts = "etcd, kube-apiserver, kube-controller-manager"
        if self.pods:
            parts += ", kube-scheduler, kwok with 2 fake nodes"
        say(f"starting a local control plane ({parts}); {self.hint}")
        # kubeconfig="": never attach to $PYCTRL_TEST_KUBECONFIG or any other cluster.
        cp = ControlPlane(crd_dirs=self.crds, controller_manager=True, pods=self.pods,
                          kubeconfig="", binaries=binaries)
        cp.start()
        self._cp = cp
        self.kubeconfig_path, self.server = cp.kubeconfig_path, cp.server
        say(f"local control plane at {cp.server}")
        say(f"kubeconfig {cp.kubeconfig_path}")

    def _binaries(self) -> Binaries:
        """The local control plane's binaries (the lookup of pyctrl.testing.envtest, never a
        build); missing ones are a UsageError naming ``pyctrl envtest install`` and the hint."""
        from pyctrl.testing.envtest.binaries import INSTALL_HINT, BinariesNotFound, find_binaries

        try:
            found = find_binaries(build=False)
        except BinariesNotFound as err:
            raise UsageError(f"{err}; {self.hint}") from None
        if self.pods and None in (found.kube_scheduler, found.kwok, found.kwok_stages):
            raise UsageError(f"--pods needs kube-scheduler and kwok, which {found.directory} "
                             f"lacks: {INSTALL_HINT} (KUBEBUILDER_ASSETS has none)")
        return found

    def kubectl(self, *args: str) -> str:
        """Run kubectl on this cluster (raises CalledProcessError); its stdout."""
        if self._cp is not None:
            return self._cp.kubectl(*args).stdout
        kubectl = shutil.which("kubectl")
        if kubectl is None:
            from pyctrl.testing.envtest.binaries import BinariesNotFound, find_binaries

            try:
                found = find_binaries(build=False).kubectl
            except BinariesNotFound:
                found = None
            if found is None:
                raise UsageError("kubectl not found on PATH (`pyctrl envtest install` builds "
                                 "one)")
            kubectl = str(found)
        return subprocess.run([kubectl, *self._kubectl_flags(), *args], check=True,
                              capture_output=True, text=True, timeout=120).stdout

    def _kubectl_flags(self) -> list[str]:
        flags = [f"--kubeconfig={self.kubeconfig_path}"] if self.kubeconfig_path else []
        return flags + ([f"--context={self.context}"] if self.context else [])


def _reachable(server: str, *, context: str | None, proxied: bool) -> None:
    """A TCP connection to ``server`` opens (UsageError otherwise): a stopped or unknown
    cluster is one line, not the manager's retries. Skipped behind a proxy."""
    import os
    from urllib.parse import urlsplit

    if proxied or os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy"):
        return
    url = urlsplit(server)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname or "", port), timeout=5).close()
    except OSError as err:
        raise UsageError(
            f"cannot reach {server} (context {context!r}): {err.strerror or err}; start that "
            "cluster, pick another --context, or leave --context out for a local control "
            "plane (`pyctrl envtest install` builds its binaries)") from None


def _documents(path: Path) -> list[dict[str, Any]]:
    """The manifests in ``path`` (a file of any name, or a directory's YAML/JSON files); a
    file that is not YAML, or a document that is not a mapping, is a UsageError."""
    import yaml

    from pyctrl.testing.envtest.manifests import load_manifests

    if path.is_file() and path.suffix not in (".yaml", ".yml", ".json"):
        raise UsageError(f"{path}: not a .yaml, .yml or .json file")
    try:
        docs = load_manifests([path])
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(err, "problem", None) or type(err).__name__
        raise UsageError(f"{path}: not valid YAML{where}: {problem}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"{path}: cannot read it: {err}") from None
    return docs


def check_crds(paths: Sequence[Path]) -> None:
    """Every document of every ``--crd`` path is an apiextensions.k8s.io/v1
    CustomResourceDefinition, and each path has one at least (UsageError otherwise), before
    anything starts."""
    for given in paths:
        files = sorted(p for p in given.iterdir() if p.suffix in (".yaml", ".yml", ".json")
                       ) if given.is_dir() else [given]
        docs = [(path, doc) for path in files for doc in _documents(path)]
        if not docs:
            raise UsageError(f"--crd {given}: no CustomResourceDefinition in it")
        for path, doc in docs:
            if (doc.get("apiVersion"), doc.get("kind")) != (
                    "apiextensions.k8s.io/v1", "CustomResourceDefinition"):
                meta = doc.get("metadata")
                name = meta.get("name") if isinstance(meta, dict) else None
                raise UsageError(
                    f"--crd {path}: {doc.get('apiVersion')!s} {doc.get('kind')!s} "
                    f"{name or ''} is not an apiextensions.k8s.io/v1 "
                    "CustomResourceDefinition (give other manifests with --apply)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("setup", metavar="MODULE:FUNCTION",
                        help="a function setup(manager) building the controllers")
    parser.add_argument("--crd", action="append", default=[], type=Path, metavar="PATH",
                        help="a CRD file or directory to install first (repeatable)")
    parser.add_argument("--apply", action="append", default=[], type=Path, metavar="PATH",
                        help="manifests (samples) to apply after the CRDs (repeatable)")
    parser.add_argument("--context", default=None,
                        help="run against this kubeconfig context (default: a local "
                             "throwaway control plane)")
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig for --context (default: $KUBECONFIG, ~/.kube/config)")
    parser.add_argument("--pods", action="store_true",
                        help="local control plane: also kube-scheduler and kwok, so pods run "
                             "(on paper) on fake nodes")
    parser.add_argument("--namespace", default=None,
                        help="watch only this namespace (default: all)")
    parser.add_argument("--log-level", default="info",
                        choices=("debug", "info", "warning", "error"))


def run_manager(setup: Callable[..., object], cluster: DevCluster, *,
                namespace: str | None = None, stop: threading.Event | None = None) -> int:
    """Build ``setup``'s controllers on a Manager over ``cluster`` and run it until ``stop``
    (or SIGINT/SIGTERM); the exit status (see module docstring)."""
    from prometheus_client import CollectorRegistry

    from pyctrl import (
        HealthOptions,
        Manager,
        ManagerOptions,
        MetricsOptions,
        RESTClient,
        install_signal_handlers,
    )
    from pyctrl.kube import ConfigError

    metrics_port, probe_port = free_ports(2)
    say(f"metrics: http://127.0.0.1:{metrics_port}/metrics  "
        f"probes: http://127.0.0.1:{probe_port}/healthz, /readyz")
    registry = CollectorRegistry()
    try:
        client = RESTClient.from_kubeconfig(cluster.kubeconfig_path or None, cluster.context,
                                            qps=50, burst=100, registry=registry,
                                            user_agent="pyctrl-run")
    except ConfigError as err:
        raise UsageError(str(err)) from None
    stop = stop or threading.Event()
    restore = install_signal_handlers(stop)
    try:
        manager = Manager(client, ManagerOptions(
            metrics=MetricsOptions(bind_address=f"127.0.0.1:{metrics_port}"),
            health=HealthOptions(bind_address=f"127.0.0.1:{probe_port}"),
            namespace=namespace, graceful_shutdown_timeout=1.0), registry=registry)
        setup(manager)
        say("running the controllers; Ctrl-C to stop")
        manager.run(stop)
    except Exception:
        import structlog

        structlog.get_logger("pyctrl.run").exception("the manager failed")
        return 1
    finally:
        stop.set()
        restore()
        client.close()
    return 0


def run(args: argparse.Namespace) -> int:
    from pyctrl import configure_logging
    from pyctrl.cli.gen_rbac import load_setup

    configure_logging("console", args.log_level)
    setup = load_setup(args.setup)
    for path in (*args.crd, *args.apply):
        if not path.exists():
            raise UsageError(f"{path}: no such file or directory")
    check_crds(args.crd)
    for path in args.apply:
        _documents(path)
    try:
        with DevCluster(args.crd, context=args.context, kubeconfig=args.kubeconfig,
                        pods=args.pods) as cluster:
            for path in args.apply:
                say(f"applying {path}")
                cluster.kubectl("apply", "-f", str(path))
            if cluster.local:
                say(f"try: kubectl --kubeconfig {cluster.kubeconfig_path} get all -A")
            return run_manager(setup, cluster, namespace=args.namespace)
    except KeyboardInterrupt:  # Ctrl-C before the manager's handlers were installed
        return 130
    except subprocess.CalledProcessError as err:
        print(f"error: {' '.join(map(str, err.cmd[:3]))}...: {err.stderr or err}",
              file=sys.stderr)
        return 1
