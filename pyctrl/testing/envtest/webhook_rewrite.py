"""The pure part of envtest's webhooks: webhook configurations rewritten for a server on
this host, and the apiserver's count of its calls to them.

Contract: nothing here does I/O or modifies its input. :func:`rewrite_webhook_configuration`
and :func:`rewrite_conversion_webhook` point every webhook at ``url_base`` plus its path and
trust the CA given (the rules: :mod:`pyctrl.testing.envtest.webhooks`);
:func:`namespace_selector` matches exactly the namespaces named; :func:`webhook_calls` reads
the apiserver's ``/metrics`` text. Bad input (another kind, no name, an ``http://`` base, a
clientConfig with neither service nor url, conflicting selectors) raises ValueError.
"""

from __future__ import annotations

import base64
import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["CA_INJECTION_ANNOTATIONS", "NAMESPACE_NAME_LABEL", "WEBHOOK_KINDS",
           "namespace_selector", "rewrite_conversion_webhook", "rewrite_webhook_configuration",
           "webhook_calls", "webhook_configurations", "webhook_names"]

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
_METRIC = "apiserver_admission_webhook_request_total"
_LABELS = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


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
    """``config`` pointed at ``url_base`` with ``ca_pem`` trusted (see
    :mod:`pyctrl.testing.envtest.webhooks`)."""
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


def webhook_names(configs: Iterable[Mapping[str, Any]]) -> list[str]:
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
