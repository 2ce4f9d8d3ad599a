"""envtest's webhooks and the apiserver: apply the rewritten configurations, wait until the
apiserver calls them, delete them.

Contract: :func:`install_webhooks` and :class:`InstalledWebhooks` (the rules, the probe and
what counts as a call: :mod:`pyctrl.testing.envtest.webhooks`) talk to the apiserver
through an :class:`~pyctrl.testing.envtest.http.AdminHttp` and wait in real time through
the Clock API; whatever the apiserver refuses, or a webhook never answering in time, raises
:class:`WebhookInstallError`, and an install whose probe fails deletes what it applied.
"""

from __future__ import annotations

import contextlib
import copy
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyctrl.clock import RealClock
from pyctrl.kube import meta
from pyctrl.testing.envtest.http import AdminHttp
from pyctrl.testing.envtest.manifests import load_manifests
from pyctrl.testing.envtest.webhook_rewrite import (
    namespace_selector,
    rewrite_webhook_configuration,
    webhook_calls,
    webhook_configurations,
    webhook_names,
)

__all__ = ["InstalledWebhooks", "WebhookInstallError", "install_webhooks"]

_ADMISSION = "/apis/admissionregistration.k8s.io/v1"
_CLOCK = RealClock()  # real servers: wait in real time, through the Clock API


class WebhookInstallError(RuntimeError):
    """Installing or uninstalling failed, or the apiserver never called the webhooks."""


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
    """Webhook configurations :func:`install_webhooks` applied (see
    :mod:`pyctrl.testing.envtest.webhooks`)."""

    http: AdminHttp
    configurations: list[dict[str, Any]]
    probe: Mapping[str, Any] | None = None
    _probe_path: str | None = field(default=None, repr=False)

    @property
    def names(self) -> list[str]:
        """The names of the webhooks (not of the configurations)."""
        return webhook_names(self.configurations)

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
    once the apiserver calls every one of them (see :mod:`pyctrl.testing.envtest.webhooks`)."""
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
