"""RBAC from the code: the ClusterRole (and the leader-election Role) a Manager's controllers
need, derived from what they declare (``python -m pyctrl gen rbac MODULE:setup``).

Contract: :func:`derive` reads a Manager on which a ``setup(manager)`` function has built its
controllers (never run), with the :class:`Declarations` the generator handed that Manager (the
registry of each controller's Builder and of the rules ``manager.rbac_rule`` adds), and
returns :class:`Roles`. What each declaration grants:

* every watched resource (``for_``, ``owns``, ``watches``, a ``lister_for``/``informers_for``
  of an undeclared resource, any informer made on ``manager.informers``): ``get``, ``list``,
  ``watch`` (``get`` because reconcilers read through to the server when the cache lags);
* an ``owns`` resource: ``create``, ``update``, ``patch``, ``delete`` by default (what a
  controller does to its children); ``owns(..., writes=("create", "delete"))`` narrows it;
* the ``for_`` resource: ``update``, ``patch`` on its ``status`` subresource, unless it is a
  built-in kind without one (ConfigMap, Secret, ...) or ``builder.rbac(status=False)`` says the
  reconciler never writes status (we cannot see the reconciler's writes; writing the status
  of what one reconciles is the common case, and kubebuilder scaffolds the same); ``update``
  on its ``finalizers`` subresource when the controller owns anything: children carry
  ``blockOwnerDeletion=true``, which the OwnerReferencesPermissionEnforcement admission
  plugin allows only to callers that may update the owner's finalizers;
* an event recorder (``manager.event_recorder``): ``create``, ``patch`` on core ``events``;
* secure metrics (``MetricsOptions(secure=True)``): ``create`` on ``tokenreviews`` and
  ``subjectaccessreviews`` (the scraper's token is reviewed);
* leader election: a Role in the Lease's namespace with ``get``, ``create``, ``update`` on
  ``leases``;
* anything else the code does that the declarations cannot show (the reconciler patching
  its own object to add a finalizer, creating kinds it does not watch):
  ``builder.rbac(PolicyRule...)`` or ``manager.rbac_rule(PolicyRule...)``.

Add-ons that gate controllers on Leases of their own (sharding) need more (their docs say
what); add it with ``manager.rbac_rule``. Rules are merged per API group and resource, sorted
by group then resource; verbs come in kubectl's order (get, list, watch, create, update,
patch, delete, deletecollection, then others alphabetically), so the output is
deterministic. :func:`to_yaml` writes the roles (and bindings to a ServiceAccount when asked)
with one comment per rule saying why it is there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from pyctrl._manager_options import ManagerOptions
from pyctrl.cache import SharedInformerFactory
from pyctrl.kube.resource import Resource

__all__ = [
    "DEFAULT_OWNED_WRITES",
    "Declarations",
    "Declared",
    "DeclaringController",
    "PolicyRule",
    "Roles",
    "derive",
    "to_yaml",
]

READ_VERBS = ("get", "list", "watch")
DEFAULT_OWNED_WRITES = ("create", "update", "patch", "delete")
_VERB_ORDER = ("get", "list", "watch", "create", "update", "patch", "delete",
               "deletecollection")
# Built-in kinds that have no status subresource (a for_ of these writes no status).
_NO_STATUS = frozenset({
    ("", "configmaps"), ("", "secrets"), ("", "events"), ("", "serviceaccounts"),
    ("", "endpoints"), ("coordination.k8s.io", "leases"),
    ("discovery.k8s.io", "endpointslices"), ("events.k8s.io", "events"),
    ("rbac.authorization.k8s.io", "roles"), ("rbac.authorization.k8s.io", "rolebindings"),
    ("rbac.authorization.k8s.io", "clusterroles"),
    ("rbac.authorization.k8s.io", "clusterrolebindings"),
})


# A label value YAML reads as that string without quotes (not a number, bool or null).
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9._/-]*")
_NOT_PLAIN = frozenset({"true", "false", "yes", "no", "on", "off", "null", "y", "n"})


def _verb_key(verb: str) -> tuple[int, str]:
    return (_VERB_ORDER.index(verb) if verb in _VERB_ORDER else len(_VERB_ORDER), verb)


@dataclass(frozen=True)
class PolicyRule:
    """One RBAC rule: ``verbs`` on ``resources`` (``plural`` or ``plural/subresource``) of
    ``api_groups`` ("" is the core group), or on ``non_resource_urls``."""

    verbs: tuple[str, ...]
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()
    reason: str = ""

    def __post_init__(self) -> None:
        if not self.verbs or any(not v for v in self.verbs):
            raise ValueError("a rule needs verbs")
        if bool(self.resources) == bool(self.non_resource_urls):
            raise ValueError("a rule names resources or non_resource_urls (one of them)")
        if self.resources and not self.api_groups:
            raise ValueError("a resource rule needs api_groups ('' is the core group)")

    @classmethod
    def of(cls, resource: Resource, *verbs: str, subresource: str = "",
           reason: str = "") -> PolicyRule:
        """``verbs`` on ``resource`` (or on its ``subresource``)."""
        name = f"{resource.plural}/{subresource}" if subresource else resource.plural
        return cls(tuple(verbs), (resource.group,), (name,), reason=reason)


@dataclass(frozen=True)
class Declared:
    """What one Builder declared, as RBAC sees it (``Builder.rbac_declared()``)."""

    controller: str
    for_: Resource | None
    owns: Mapping[Resource, tuple[str, ...]]  # owned resource -> write verbs
    watches: tuple[Resource, ...]
    reads: tuple[Resource, ...]
    rules: tuple[PolicyRule, ...]
    status: bool | None  # None: the default (see module docstring)


class DeclaringController(Protocol):
    """A controller's declarations as the generators read them (a
    :class:`pyctrl.builder.Builder`)."""

    @property
    def name(self) -> str: ...

    @property
    def completed(self) -> bool: ...

    def rbac_declared(self) -> Declared: ...

    def discard(self) -> None: ...


class RoleSource(Protocol):
    """What :func:`derive` reads of a Manager besides its declarations."""

    @property
    def informers(self) -> SharedInformerFactory: ...

    @property
    def has_event_broadcaster(self) -> bool: ...

    @property
    def options(self) -> ManagerOptions: ...


class Declarations:
    """What a ``setup(manager)`` declared: each controller (in order) and the extra rules.
    A generator makes one, hands it to the Manager it calls ``setup`` on, and reads it."""

    def __init__(self) -> None:
        self._controllers: list[DeclaringController] = []
        self._rules: list[PolicyRule] = []

    def add_controller(self, controller: DeclaringController) -> None:
        self._controllers.append(controller)

    def add_rules(self, *rules: PolicyRule) -> None:
        self._rules.extend(rules)

    @property
    def controllers(self) -> tuple[DeclaringController, ...]:
        return tuple(self._controllers)

    @property
    def rules(self) -> tuple[PolicyRule, ...]:
        return tuple(self._rules)

    def discard(self) -> None:
        """Release what building the controllers started (their queues' threads): for a
        Manager that will never run."""
        for controller in self._controllers:
            controller.discard()


@dataclass
class Roles:
    """The derived permissions: cluster-wide rules and the leader-election namespace."""

    cluster: list[PolicyRule]
    lease_namespace: str | None = None
    lease_rules: list[PolicyRule] = field(default_factory=list)


def _has_status(resource: Resource) -> bool:
    return (resource.group, resource.plural) not in _NO_STATUS


def _controller_rules(d: Declared) -> Iterable[PolicyRule]:
    who = f"controller {d.controller}"
    if d.for_ is not None:
        yield PolicyRule.of(d.for_, *READ_VERBS, reason=f"{who}: for_")
        if d.status if d.status is not None else _has_status(d.for_):
            yield PolicyRule.of(d.for_, "update", "patch", subresource="status",
                                reason=f"{who}: writes the status of its for_ kind")
        if d.owns:
            yield PolicyRule.of(d.for_, "update", subresource="finalizers",
                                reason=f"{who}: owned objects carry blockOwnerDeletion=true "
                                       "(OwnerReferencesPermissionEnforcement)")
    for resource, writes in d.owns.items():
        yield PolicyRule.of(resource, *READ_VERBS, *writes, reason=f"{who}: owns")
    for resource in d.watches:
        yield PolicyRule.of(resource, *READ_VERBS, reason=f"{who}: watches")
    for resource in d.reads:
        yield PolicyRule.of(resource, *READ_VERBS, reason=f"{who}: reads (lister)")
    yield from d.rules


def derive(manager: RoleSource, declarations: Declarations) -> Roles:
    """The roles ``manager``'s controllers and options need (see module docstring)."""
    rules: list[PolicyRule] = []
    covered: set[Resource] = set()
    for builder in declarations.controllers:
        declared = builder.rbac_declared()
        rules.extend(_controller_rules(declared))
        covered.update((*filter(None, [declared.for_]), *declared.owns, *declared.watches,
                        *declared.reads))
    for resource in manager.informers.resources():
        if resource not in covered:
            rules.append(PolicyRule.of(resource, *READ_VERBS, reason="informer"))
    if manager.has_event_broadcaster:
        rules.append(PolicyRule(("create", "patch"), ("",), ("events",),
                                reason="event recorder"))
    if manager.options.metrics.secure:
        why = "secure /metrics: the scraper's token and its access are reviewed"
        rules.append(PolicyRule(("create",), ("authentication.k8s.io",), ("tokenreviews",),
                                reason=why))
        rules.append(PolicyRule(("create",), ("authorization.k8s.io",),
                                ("subjectaccessreviews",), reason=why))
    rules.extend(declarations.rules)
    roles = Roles(merge(rules))
    election = manager.options.leader_election
    if election is not None:
        roles.lease_namespace = election.namespace
        roles.lease_rules = [PolicyRule(("get", "create", "update"), ("coordination.k8s.io",),
                                        ("leases",), reason="leader election")]
    return roles


def merge(rules: Iterable[PolicyRule]) -> list[PolicyRule]:
    """One rule per (group, resource, resource names) or non-resource URL, verbs united,
    reasons kept (first seen first), sorted (resources first, then non-resource URLs)."""
    merged: dict[tuple[str, str, tuple[str, ...], str], tuple[set[str], list[str]]] = {}
    for rule in rules:
        targets = ([(g, r, rule.resource_names, "") for g in rule.api_groups
                    for r in rule.resources]
                   or [("", "", (), url) for url in rule.non_resource_urls])
        for target in targets:
            verbs, reasons = merged.setdefault(target, (set(), []))
            verbs.update(rule.verbs)
            if rule.reason and rule.reason not in reasons:
                reasons.append(rule.reason)
    out = []
    for (group, resource, names, url), (verbs, reasons) in sorted(
            merged.items(), key=lambda item: (bool(item[0][3]), item[0])):
        ordered = tuple(sorted(verbs, key=_verb_key))
        why = "; ".join(reasons)
        if url:
            out.append(PolicyRule(ordered, non_resource_urls=(url,), reason=why))
        else:
            out.append(PolicyRule(ordered, (group,), (resource,), names, reason=why))
    return out


def _flow(values: Sequence[str]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def _scalar(text: str) -> str:
    plain = _PLAIN.fullmatch(text) and text.lower() not in _NOT_PLAIN
    return text if plain else json.dumps(text)


def _metadata_lines(name: str, namespace: str | None, labels: Mapping[str, str]) -> list[str]:
    lines = ["metadata:", f"  name: {name}"]
    if namespace:
        lines.append(f"  namespace: {namespace}")
    if labels:
        lines.append("  labels:")
        lines += [f"    {_scalar(k)}: {_scalar(v)}" for k, v in sorted(labels.items())]
    return lines


def _role(kind: str, name: str, namespace: str | None, labels: Mapping[str, str],
          rules: Sequence[PolicyRule]) -> list[str]:
    lines = ["apiVersion: rbac.authorization.k8s.io/v1", f"kind: {kind}",
             *_metadata_lines(name, namespace, labels), "rules:"]
    for rule in rules:
        if rule.reason:
            lines.append(f"  # {rule.reason}")
        if rule.non_resource_urls:
            lines.append(f"  - nonResourceURLs: {_flow(rule.non_resource_urls)}")
        else:
            lines.append(f"  - apiGroups: {_flow(rule.api_groups)}")
            lines.append(f"    resources: {_flow(rule.resources)}")
            if rule.resource_names:
                lines.append(f"    resourceNames: {_flow(rule.resource_names)}")
        lines.append(f"    verbs: {_flow(rule.verbs)}")
    return lines


def _binding(kind: str, role_kind: str, name: str, namespace: str | None,
             labels: Mapping[str, str], service_account: tuple[str, str]) -> list[str]:
    sa_namespace, sa_name = service_account
    return ["apiVersion: rbac.authorization.k8s.io/v1", f"kind: {kind}",
            *_metadata_lines(name, namespace, labels), "roleRef:",
            "  apiGroup: rbac.authorization.k8s.io", f"  kind: {role_kind}", f"  name: {name}",
            "subjects:", "  - kind: ServiceAccount", f"    name: {sa_name}",
            f"    namespace: {sa_namespace}"]


def to_yaml(roles: Roles, *, name: str, labels: Mapping[str, str] | None = None,
            service_account: tuple[str, str] | None = None, header: str = "") -> str:
    """The ClusterRole ``name`` (and the Role ``name-leader-election`` in the Lease's
    namespace), each followed by its binding to ``service_account`` (namespace, name) when
    given, as one YAML stream; ``header`` is written first as comment lines."""
    labels = labels or {}
    docs = [_role("ClusterRole", name, None, labels, roles.cluster)]
    if service_account:
        docs.append(_binding("ClusterRoleBinding", "ClusterRole", name, None, labels,
                             service_account))
    if roles.lease_namespace is not None:
        lease_name = f"{name}-leader-election"
        docs.append(_role("Role", lease_name, roles.lease_namespace, labels, roles.lease_rules))
        if service_account:
            docs.append(_binding("RoleBinding", "Role", lease_name, roles.lease_namespace,
                                 labels, service_account))
    head = "".join(f"# {line}\n".replace("# \n", "#\n") for line in header.splitlines())
    return head + "---\n".join("\n".join(doc) + "\n" for doc in docs)
