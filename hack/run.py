"""`make run`: run the CronJob controller end to end.

* With a reachable cluster in the kubeconfig ($KUBECONFIG or ~/.kube/config): install the CRD
  and run the controller against that cluster in the foreground.
* With none: start a local control plane (pyctrl.testing.envtest: etcd, kube-apiserver and
  kube-controller-manager for garbage collection), install the CRD and the sample CronJob
  (manifests/samples/), and run the controller in the foreground. Jobs appear every minute in
  the log ("created job"); a watcher also prints each Job as the API server reports it.
  Ctrl-C stops the controller gracefully, then the control plane, and removes its files.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cronjob_controller.__main__ import main as controller_main  # noqa: E402
from pyctrl import RESTClient  # noqa: E402
from pyctrl.kube import JOBS, NAMESPACES  # noqa: E402
from pyctrl.testing.envtest import ControlPlane  # noqa: E402


def reachable_kubeconfig() -> str | None:
    """The kubeconfig path if it points at an API server that answers, else None."""
    path = os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    if not Path(path.split(os.pathsep)[0]).is_file():
        return None
    try:
        client = RESTClient.from_kubeconfig(path, timeout=3.0)
        client.list(NAMESPACES, limit=1)
        client.close()
    except Exception as err:
        print(f"run: kubeconfig {path} is not reachable ({type(err).__name__}: {err}); "
              "starting a local control plane instead", flush=True)
        return None
    return path


def show_jobs(kubeconfig: str, stop: threading.Event) -> None:
    """Print every Job the API server reports as created (a live view for the demo)."""
    client = RESTClient.from_kubeconfig(kubeconfig)
    rv = client.list(JOBS, "default")["metadata"].get("resourceVersion")
    while not stop.is_set():
        try:
            stream = client.watch(JOBS, "default", resource_version=rv, timeout_seconds=60)
            for event in stream:
                obj = event.get("object") or {}
                rv = obj.get("metadata", {}).get("resourceVersion", rv)
                if event.get("type") == "ADDED":
                    meta = obj["metadata"]
                    print(f">>> Job created: {meta['namespace']}/{meta['name']} at "
                          f"{meta.get('creationTimestamp')}", flush=True)
                if stop.is_set():
                    stream.close()
                    break
        except Exception:  # the demo view must never take the controller down
            if stop.wait(2.0):
                break
    client.close()


def main() -> int:
    args = ["--log-format", "console", "--metrics-bind-address", ":8080",
            "--health-probe-bind-address", ":8081", *sys.argv[1:]]
    kubeconfig = reachable_kubeconfig()
    if kubeconfig is not None:
        print(f"run: using the cluster in {kubeconfig}; installing the CRD", flush=True)
        subprocess.run(["kubectl", f"--kubeconfig={kubeconfig}", "apply", "-f",
                        str(ROOT / "crds")], check=True)
        return controller_main(["--kubeconfig", kubeconfig, *args])
    with ControlPlane(crd_dirs=[ROOT / "crds"], controller_manager=True) as cp:
        cp.kubectl("apply", "-f", str(ROOT / "manifests" / "samples"))
        print(f"run: local control plane at {cp.server}\n"
              f"run: kubeconfig {cp.kubeconfig_path}\n"
              f"run: try: kubectl --kubeconfig {cp.kubeconfig_path} get pcj,jobs -A\n"
              "run: the sample CronJob runs every minute; Ctrl-C to stop", flush=True)
        stop = threading.Event()
        viewer = threading.Thread(target=show_jobs, args=(cp.kubeconfig_path, stop),
                                  name="job-viewer", daemon=True)
        viewer.start()
        try:
            return controller_main(["--kubeconfig", cp.kubeconfig_path, *args])
        finally:
            stop.set()
            print("run: stopping the local control plane", flush=True)


if __name__ == "__main__":
    sys.exit(main())
