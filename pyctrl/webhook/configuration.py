"""How the API server should call an admission handler, and the webhook configurations made
from it (``python -m pyctrl gen webhook MODULE:setup``).

Contract: an :class:`Admission` (frozen, validated) says of one handler: validating or
mutating, the resource it admits (rules: that resource's group, version and plural), the
operations, ``failurePolicy``, ``sideEffects``, ``timeoutSeconds`` and the webhook's name
(default ``v<kind>.<group>``/``m<kind>.<group>``, lowercased). It is given with the handler:
``WebhookServer.register(path, handler, admission=Admission(...))`` (or ``admission=`` to the
constructor, by path); :attr:`WebhookServer.admission` lists them. :func:`configurations`
makes one MutatingWebhookConfiguration and one ValidatingWebhookConfiguration (each only when
it has webhooks) with ``admissionReviewVersions: ["v1"]`` and a ``clientConfig`` that is
either a Service reference (:class:`ServiceTarget`, the path appended) or a URL base (the
path appended); webhooks are sorted by name, so the output is deterministic.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from pyctrl.kube.resource import Resource

__all__ = ["Admission", "ServiceTarget", "configurations", "to_yaml"]

_OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT", "*"})


@dataclass(frozen=True)
class Admission:
    """How one admission handler is called (see module docstring)."""

    type: Literal["validating", "mutating"]
    resource: Resource
    operations: tuple[str, ...] = ("CREATE", "UPDATE")
    failure_policy: Literal["Fail", "Ignore"] = "Fail"
    side_effects: Literal["None", "NoneOnDryRun"] = "None"
    timeout_seconds: int = 10
    name: str = ""

    def __post_init__(self) -> None:
        if self.type not in ("validating", "mutating"):
            raise ValueError(f"type must be validating or mutating, got {self.type!r}")
        if not self.operations or not set(self.operations) <= _OPERATIONS:
            raise ValueError(f"operations must be some of {sorted(_OPERATIONS)}")
        if not 1 <= self.timeout_seconds <= 30:
            raise ValueError("timeout_seconds must be 1 to 30 (the API server's bounds)")
        if self.name and "." not in self.name:
            raise ValueError("a webhook name must be fully qualified (contain a dot)")

    @property
    def webhook_name(self) -> str:
        if self.name:
            return self.name
        r = self.resource
        return f"{self.type[0]}{r.kind.lower()}.{r.group or 'core'}"


@dataclass(frozen=True)
class ServiceTarget:
    """The in-cluster Service the API server calls."""

    namespace: str
    name: str
    port: int = 443


def configurations(admission: Mapping[str, Admission], target: ServiceTarget | str
                   ) -> list[tuple[str, list[dict[str, object]]]]:
    """(configuration kind, webhooks) for the mutating then the validating handlers of
    ``admission`` (path -> Admission); ``target`` a Service or a URL base."""
    out = []
    for type_, kind in (("mutating", "MutatingWebhookConfiguration"),
                        ("validating", "ValidatingWebhookConfiguration")):
        hooks = sorted(((a, path) for path, a in admission.items() if a.type == type_),
                       key=lambda item: item[0].webhook_name)
        if hooks:
            out.append((kind, [_webhook(a, path, target) for a, path in hooks]))
    return out


def _webhook(a: Admission, path: str, target: ServiceTarget | str) -> dict[str, object]:
    client: dict[str, object]
    if isinstance(target, ServiceTarget):
        client = {"service": {"name": target.name, "namespace": target.namespace,
                              "path": path, "port": target.port}}
    else:
        client = {"url": target.rstrip("/") + path}
    r = a.resource
    return {"name": a.webhook_name, "admissionReviewVersions": ["v1"],
            "sideEffects": a.side_effects, "failurePolicy": a.failure_policy,
            "timeoutSeconds": a.timeout_seconds, "clientConfig": client,
            "rules": [{"apiGroups": [r.group], "apiVersions": [r.version],
                       "operations": list(a.operations), "resources": [r.plural]}]}


def _flow(values: object) -> str:
    assert isinstance(values, list)
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def _hook_lines(hook: Mapping[str, object]) -> list[str]:
    lines = [f"  - name: {hook['name']}",
             f"    admissionReviewVersions: {_flow(hook['admissionReviewVersions'])}"]
    lines += [f"    {k}: {hook[k]}" for k in ("sideEffects", "failurePolicy", "timeoutSeconds")]
    lines.append("    clientConfig:")
    client = hook["clientConfig"]
    assert isinstance(client, dict)
    if "url" in client:
        lines.append(f"      url: {client['url']}")
    else:
        lines.append("      service:")
        lines += [f"        {k}: {v}" for k, v in client["service"].items()]
    lines.append("    rules:")
    rules = hook["rules"]
    assert isinstance(rules, list)
    for rule in rules:
        first = True
        for key in ("apiGroups", "apiVersions", "operations", "resources"):
            lines.append(f"{'      - ' if first else '        '}{key}: {_flow(rule[key])}")
            first = False
    return lines


def to_yaml(configs: Iterable[tuple[str, list[dict[str, object]]]], *, name: str,
            labels: Mapping[str, str] | None = None,
            annotations: Mapping[str, str] | None = None, header: str = "") -> str:
    """The configurations as one YAML stream, each named ``name``; ``header`` first as
    comment lines."""
    docs = []
    for kind, hooks in configs:
        lines = ["apiVersion: admissionregistration.k8s.io/v1", f"kind: {kind}", "metadata:",
                 f"  name: {name}"]
        for key, values in (("labels", labels), ("annotations", annotations)):
            if values:
                lines.append(f"  {key}:")
                lines += [f"    {k}: {v}" for k, v in sorted(values.items())]
        lines.append("webhooks:")
        for hook in hooks:
            lines += _hook_lines(hook)
        docs.append("\n".join(lines) + "\n")
    head = "".join(f"# {line}\n".replace("# \n", "#\n") for line in header.splitlines())
    return head + "---\n".join(docs)
