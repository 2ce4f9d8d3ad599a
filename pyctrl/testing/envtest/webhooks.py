"""envtest webhooks: register a project's admission webhooks against a server on this host.

What controller-runtime's envtest ``WebhookInstallOptions`` does, for pyctrl tests:

* :func:`rewrite_webhook_configuration` is pure (a configuration in, a new one out; the input
  is never modified): every webhook's ``clientConfig`` becomes ``url: <url_base><path>`` (the
  path of its ``service`` reference, ``/`` when it has none, or the path of an existing
  ``url``: every webhook must end at the local server), ``caBundle`` becomes the base64 of the
  test CA, cert-manager's CA-injection annotations are dropped (nothing would inject here),
  an optional namespace selector is ANDed with the webhook's own, and an optional suffix makes
  the configuration's name unique. Server-populated metadata (resourceVersion, uid, ...) is
  dropped so the result can be created anew.
* :func:`install_webhooks` applies the Mutating/ValidatingWebhookConfigurations found in
  manifest files, directories or already-loaded documents (other kinds are ignored; none at
  all is an error) and, given a ``probe`` object, waits until the apiserver has called every
  installed webhook and got an answer: it dry-run creates the probe and reads the apiserver's
  ``apiserver_admission_webhook_request_total`` counter per webhook name, counting only calls
  the webhook answered (an answer is any HTTP code below 500; failed calls are recorded with
  5xx). So the probe must match every webhook's rules and namespace selector, pass the schema
  (validating webhooks run after it), and the webhooks must be ``sideEffects: None`` (or
  ``NoneOnDryRun``). :meth:`InstalledWebhooks.uninstall` deletes the configurations and, with
  a probe, waits until the apiserver no longer calls them.
* The whole integration suite shares one apiserver, so tests scope what they install with
  ``namespaces=[...]`` (a selector on the ``kubernetes.io/metadata.name`` label) and a
  ``name_suffix``: other tests never meet these webhooks and never collide with their names.
* :class:`LocalWebhookServer` runs a :class:`pyctrl.webhook.WebhookServer` on 127.0.0.1 with
  its own CA and serving certificate (:func:`pyctrl.webhook.generate_certs`); it can be
  stopped and started again on the same port, and :meth:`LocalWebhookServer.rotate` /
  :func:`install_serving_cert` replace the certificate under the running server the way a
  mounted Secret changes (certificate, then key, each file atomically).

The URL points at 127.0.0.1, so only a control plane running on this host can call it: an
existing cluster (``ControlPlane(kubeconfig=...)``) raises :class:`Unsupported`.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import os
import re
import shutil
import threading
import types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyctrl.clock import RealClock
from pyctrl.kube import meta
from pyctrl.testing.envtest.http import AdminHttp
from pyctrl.testing.envtest.manifests import load_manifests
from pyctrl.webhook import CertificatePaths, ServedHandler, WebhookServer, WebhookServerOptions
from pyctrl.webhook import generate_certs as _generate_certs

__all__ = [
    "CA_INJECTION_ANNOTATIONS",
    "NAMESPACE_NAME_LABEL",
    "WEBHOOK_KINDS",
    "InstalledWebhooks",
    "LocalWebhookServer",
    "WebhookInstallError",
    "install_serving_cert",
    "install_webhooks",
    "namespace_selector",
    "rewrite_conversion_webhook",
    "rewrite_webhook_configuration",
    "webhook_calls",
    "webhook_configurations",
]

WEBHOOK_KINDS: tuple[str, ...] = (
    "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
)
CA_INJECTION_ANNOTATIONS: tuple[str, ...] = (
    "cert-manager.io/inject-ca-from",
    "cert-manager.io/inject-ca-from-secret",
    "cert-manager.io/inject-apiserver-ca",
)
# Set by the apiserver on every namespace (since 1.21), so a selector can name namespaces.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
_SERVER_FIELDS = ("resourceVersion", "uid", "creationTimestamp", "generation",
                  "managedFields", "selfLink")
_ADMISSION = "/apis/admissionregistration.k8s.io/v1"
_METRIC = "apiserver_admission_webhook_request_total"
_LABELS = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
_CLOCK = RealClock()  # real servers: wait in real time, through the Clock API


class WebhookInstallError(RuntimeError):
    """Installing or uninstalling failed, or the apiserver never called the webhooks."""


# -- the pure part --------------------------------------------------------------------------
def webhook_configurations(docs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Deep copies of the Mutating/ValidatingWebhookConfigurations among ``docs``."""
    return [copy.deepcopy(dict(d)) for d in docs if d.get("kind") in WEBHOOK_KINDS]


def namespace_selector(namespaces: Sequence[str]) -> dict[str, Any]:
    """A namespaceSelector matching exactly the named namespaces."""
    if not namespaces:
        raise ValueError("at least one namespace is required")
    return {"matchExpressions": [
        {"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": list(namespaces)}]}


def _and_selectors(own: Mapping[str, Any] | None, extra: Mapping[str, Any]) -> dict[str, Any]:
    """A label selector matching what both match (matchLabels and expressions are ANDed)."""
    out = copy.deepcopy(dict(own or {}))
    labels = dict(out.get("matchLabels") or {})
    for key, value in (extra.get("matchLabels") or {}).items():
        if labels.get(key, value) != value:
            raise ValueError(f"namespaceSelector conflict on label {key!r}: "
                             f"{labels[key]!r} != {value!r}")
        labels[key] = value
    if labels:
        out["matchLabels"] = labels
    expressions = [*(out.get("matchExpressions") or []),
                   *copy.deepcopy(list(extra.get("matchExpressions") or []))]
    if expressions:
        out["matchExpressions"] = expressions
    return out


def _url_path(client_config: Mapping[str, Any]) -> str:
    service = client_config.get("service")
    if isinstance(service, Mapping):
        path = str(service.get("path") or "/")
    elif client_config.get("url"):
        # Keep the path (and query) of an existing URL; only scheme and host change.
        match = re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#]*(.*)$", str(client_config["url"]))
        path = (match.group(1) if match else "") or "/"
    else:
        raise ValueError("clientConfig has neither service nor url")
    return path if path.startswith("/") else f"/{path}"


def rewrite_webhook_configuration(
    config: Mapping[str, Any],
    url_base: str,
    ca_pem: bytes,
    *,
    selector: Mapping[str, Any] | None = None,
    name_suffix: str = "",
) -> dict[str, Any]:
    """``config`` pointed at ``url_base`` with ``ca_pem`` trusted (see module docstring)."""
    if config.get("kind") not in WEBHOOK_KINDS:
        raise ValueError(f"not a webhook configuration: kind {config.get('kind')!r}")
    if not url_base.startswith("https://"):
        raise ValueError(f"the apiserver calls webhooks over https only, got {url_base!r}")
    out = copy.deepcopy(dict(config))
    metadata = out.setdefault("metadata", {})
    if not metadata.get("name"):
        raise ValueError("webhook configuration without metadata.name")
    metadata["name"] = f"{metadata['name']}{name_suffix}"
    for key in _SERVER_FIELDS:
        metadata.pop(key, None)
    out.pop("status", None)
    annotations = {k: v for k, v in (metadata.get("annotations") or {}).items()
                   if k not in CA_INJECTION_ANNOTATIONS}
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    ca_bundle = base64.b64encode(ca_pem).decode("ascii")
    for webhook in out.get("webhooks") or []:
        client_config = webhook.get("clientConfig") or {}
        webhook["clientConfig"] = {"url": url_base.rstrip("/") + _url_path(client_config),
                                   "caBundle": ca_bundle}
        if selector is not None:
            webhook["namespaceSelector"] = _and_selectors(webhook.get("namespaceSelector"),
                                                          selector)
    return out


def rewrite_conversion_webhook(crd: Mapping[str, Any], url_base: str,
                               ca_pem: bytes) -> dict[str, Any]:
    """``crd`` (a CustomResourceDefinition with ``conversion.strategy: Webhook``) with its
    conversion webhook pointed at ``url_base`` plus the path of its ``service`` (``/`` when
    it has none) and ``ca_pem`` trusted: how a test serves conversion from this host."""
    if crd.get("kind") != "CustomResourceDefinition":
        raise ValueError(f"not a CRD: kind {crd.get('kind')!r}")
    if not url_base.startswith("https://"):
        raise ValueError(f"the apiserver calls webhooks over https only, got {url_base!r}")
    out = copy.deepcopy(dict(crd))
    conversion = out.get("spec", {}).get("conversion") or {}
    if conversion.get("strategy") != "Webhook":
        raise ValueError(f"CRD {out.get('metadata', {}).get('name')} has no conversion webhook")
    webhook = conversion.setdefault("webhook", {})
    webhook.setdefault("conversionReviewVersions", ["v1"])
    webhook["clientConfig"] = {
        "url": url_base.rstrip("/") + _url_path(webhook.get("clientConfig") or {}),
        "caBundle": base64.b64encode(ca_pem).decode("ascii")}
    return out


def _webhook_names(configs: Iterable[Mapping[str, Any]]) -> list[str]:
    return [str(w["name"]) for c in configs for w in c.get("webhooks") or []]


def webhook_calls(metrics_text: str, names: Iterable[str], *,
                  answered_only: bool = True) -> dict[str, int]:
    """Per webhook name, the apiserver's calls to it from its ``/metrics`` text: only those
    the webhook answered (HTTP code < 500) unless ``answered_only`` is false."""
    counts = dict.fromkeys(names, 0)
    for line in metrics_text.splitlines():
        if not line.startswith(_METRIC + "{"):
            continue
        labels_text, _, value = line[len(_METRIC) + 1:].rpartition("} ")
        labels = dict(_LABELS.findall(labels_text))
        name, code = labels.get("name", ""), labels.get("code", "")
        if name not in counts:
            continue
        if answered_only and not (code.isdigit() and int(code) < 500):
            continue
        counts[name] += int(float(value))
    return counts


# -- talking to the apiserver ---------------------------------------------------------------
def _load(sources: Iterable[Path | str | Mapping[str, Any]]) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for source in sources:
        if isinstance(source, Mapping):
            docs.append(dict(source))
        else:
            docs.extend(load_manifests([source]))
    return docs


def _collection(config: Mapping[str, Any]) -> str:
    return f"{_ADMISSION}/{str(config['kind']).lower()}s"


@dataclass
class InstalledWebhooks:
    """Webhook configurations :func:`install_webhooks` applied (see module docstring)."""

    http: AdminHttp
    configurations: list[dict[str, Any]]
    probe: Mapping[str, Any] | None = None
    _probe_path: str | None = field(default=None, repr=False)

    @property
    def names(self) -> list[str]:
        """The names of the webhooks (not of the configurations)."""
        return _webhook_names(self.configurations)

    def apply(self) -> None:
        """Create each configuration, or replace it when it exists."""
        for config in self.configurations:
            collection, name = _collection(config), config["metadata"]["name"]
            status, body = self.http.request("POST", collection, config)
            if status == 409:
                status, current = self.http.request("GET", f"{collection}/{name}")
                if status == 200:
                    replacement = copy.deepcopy(config)
                    replacement["metadata"]["resourceVersion"] = (
                        current["metadata"]["resourceVersion"])
                    status, body = self.http.request("PUT", f"{collection}/{name}",
                                                     replacement)
            if status >= 300:
                raise WebhookInstallError(f"applying {config['kind']} {name}: {status} {body}")

    def calls(self, *, answered_only: bool = True) -> dict[str, int]:
        """Calls per webhook name as the apiserver counts them (see :func:`webhook_calls`)."""
        status, text = self.http.request("GET", "/metrics", timeout=20.0)
        if status != 200 or not isinstance(text, str):
            raise WebhookInstallError(f"reading apiserver /metrics: {status}")
        return webhook_calls(text, self.names, answered_only=answered_only)

    def probe_once(self) -> tuple[int, Any]:
        """Dry-run create the probe object; the apiserver's (status, body)."""
        if self.probe is None:
            raise WebhookInstallError("no probe object was given")
        if self._probe_path is None:
            self._probe_path = _resource_path(self.http, self.probe)
        return self.http.request("POST", f"{self._probe_path}?dryRun=All", self.probe)

    def wait_until_called(self, timeout: float = 30.0) -> None:
        """Probe until every webhook has answered the apiserver at least once."""
        before = self.calls()
        deadline = _CLOCK.monotonic() + timeout
        while True:
            status, body = self.probe_once()
            now = self.calls()
            silent = [n for n in self.names if now[n] <= before[n]]
            if not silent:
                return
            if _CLOCK.monotonic() > deadline:
                raise WebhookInstallError(
                    f"the apiserver never got an answer from {silent} within {timeout:.0f}s "
                    f"(last probe: {status} {body})")
            threading.Event().wait(0.1)

    def uninstall(self, timeout: float = 30.0) -> None:
        """Delete the configurations; with a probe, wait until none of them is called."""
        for config in self.configurations:
            name = config["metadata"]["name"]
            status, body = self.http.request("DELETE", f"{_collection(config)}/{name}")
            if status not in (200, 202, 404):
                raise WebhookInstallError(f"deleting {config['kind']} {name}: {status} {body}")
        if self.probe is None:
            return
        deadline = _CLOCK.monotonic() + timeout
        while True:
            # Failed calls count too: a stopped server must not look like "not called".
            before = self.calls(answered_only=False)
            self.probe_once()
            if self.calls(answered_only=False) == before:
                return
            if _CLOCK.monotonic() > deadline:
                raise WebhookInstallError(f"{self.names} still called {timeout:.0f}s after "
                                          "their configurations were deleted")
            threading.Event().wait(0.1)


def _resource_path(http: AdminHttp, obj: Mapping[str, Any]) -> str:
    """The collection URL of ``obj`` (found through discovery)."""
    api_version, kind = str(obj["apiVersion"]), str(obj["kind"])
    base = f"/apis/{api_version}" if meta.api_group(api_version) else f"/api/{api_version}"
    status, body = http.request("GET", base)
    if status != 200:
        raise WebhookInstallError(f"discovery of {api_version}: {status} {body}")
    for resource in body.get("resources", []):
        if resource.get("kind") == kind and "/" not in resource["name"]:
            namespace = meta.namespace(obj)
            if resource.get("namespaced") and namespace:
                return f"{base}/namespaces/{namespace}/{resource['name']}"
            return f"{base}/{resource['name']}"
    raise WebhookInstallError(f"{kind} is not served by {api_version}")


def install_webhooks(
    http: AdminHttp,
    sources: Iterable[Path | str | Mapping[str, Any]],
    url_base: str,
    ca_pem: bytes,
    *,
    namespaces: Sequence[str] | None = None,
    name_suffix: str = "",
    probe: Mapping[str, Any] | None = None,
    timeout: float = 30.0,
) -> InstalledWebhooks:
    """Rewrite and apply the webhook configurations in ``sources``; with ``probe``, return
    once the apiserver calls every one of them (see module docstring)."""
    selector = namespace_selector(namespaces) if namespaces is not None else None
    configs = [rewrite_webhook_configuration(c, url_base, ca_pem, selector=selector,
                                             name_suffix=name_suffix)
               for c in webhook_configurations(_load(sources))]
    if not configs:
        raise WebhookInstallError("no Mutating/ValidatingWebhookConfiguration in the sources")
    installed = InstalledWebhooks(http, configs, probe)
    installed.apply()
    if probe is not None:
        try:
            installed.wait_until_called(timeout)
        except BaseException:
            # Leave nothing behind (failurePolicy Fail would refuse writes), and report
            # why the install failed rather than a problem while cleaning up.
            with contextlib.suppress(WebhookInstallError, OSError):
                installed.uninstall(timeout)
            raise
    return installed


# -- a local server the apiserver can call ----------------------------------------------------
def install_serving_cert(source: CertificatePaths, cert_dir: Path) -> None:
    """Copy ``tls.crt`` then ``tls.key`` into ``cert_dir``, each file atomically (the pair is
    briefly mismatched, as when the kubelet updates a mounted Secret)."""
    cert_dir.mkdir(parents=True, exist_ok=True)
    for src in (source.cert_file, source.key_file):
        tmp = cert_dir / f".{src.name}.new"
        shutil.copyfile(src, tmp)
        os.replace(tmp, cert_dir / src.name)


class LocalWebhookServer:
    """A :class:`WebhookServer` on 127.0.0.1 with its own certificates (module docstring)."""

    def __init__(self, handlers: Mapping[str, ServedHandler], directory: Path, *,
                 cert_poll_seconds: float = 0.2) -> None:
        self.handlers = dict(handlers)
        self.directory = Path(directory)
        self.cert_dir = self.directory / "serving-certs"
        self.cert_poll_seconds = cert_poll_seconds
        self._generation = 0
        self.certs = self._new_certs()
        install_serving_cert(self.certs, self.cert_dir)
        self._port = 0
        self.server: WebhookServer | None = None

    def _new_certs(self) -> CertificatePaths:
        self._generation += 1
        return _generate_certs(self.directory / f"certs-{self._generation}", ["localhost"],
                               ["127.0.0.1"])

    @property
    def ca_pem(self) -> bytes:
        """The CA of the certificates generated last (what ``caBundle`` should trust)."""
        return self.certs.ca_file.read_bytes()

    @property
    def port(self) -> int:
        if not self._port:
            raise RuntimeError("the webhook server was never started")
        return self._port

    @property
    def url_base(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Start serving (again, on the same port after :meth:`stop`)."""
        if self.server is not None:
            return
        server = WebhookServer(WebhookServerOptions(
            cert_dir=str(self.cert_dir), host="127.0.0.1", port=self._port,
            cert_poll_seconds=self.cert_poll_seconds), self.handlers)
        server.start()
        self.server, self._port = server, server.port

    def stop(self) -> None:
        """Stop serving: the apiserver's calls get "connection refused". Idempotent."""
        if self.server is not None:
            self.server.shutdown()
            self.server = None

    def rotate(self) -> CertificatePaths:
        """Generate a new CA and serving certificate (not yet served: see
        :func:`install_serving_cert` with :attr:`cert_dir`) and return them."""
        self.certs = self._new_certs()
        return self.certs

    def __enter__(self) -> LocalWebhookServer:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: types.TracebackType | None) -> None:
        self.stop()
