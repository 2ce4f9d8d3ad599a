"""The project record (``PROJECT``, YAML) and the names derived from it.

Contract: :class:`Project` is what ``pyctrl init`` recorded (``name``, a DNS label; the
Python ``package``; the API ``group`` under ``domain``) plus one :class:`Resource` per
kind ``create api`` added (its first version, the storage version the controller reads;
the versions added to it since; whether ``create webhook`` added its admission webhooks and
its conversion webhook). :func:`load`
reads ``PROJECT`` from a directory (UsageError when it is missing or not one); ``dump`` is
its text. Names are checked when made: a bad one is a UsageError saying what is allowed.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from pyctrl.cli import UsageError, read_old

__all__ = ["PROJECT_FILE", "Project", "Resource", "check_kind", "check_version", "load"]

PROJECT_FILE = "PROJECT"
_DNS_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_KIND = re.compile(r"[A-Z][A-Za-z0-9]*")
_VERSION = re.compile(r"v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?")


def check_kind(kind: str) -> str:
    if not _KIND.fullmatch(kind) or len(kind) > 63:
        raise UsageError(f"--kind {kind!r}: a kind is CamelCase letters and digits, "
                         "starting with a capital (Backup, WebSite)")
    return kind


def check_version(version: str) -> str:
    if not _VERSION.fullmatch(version):
        raise UsageError(f"--version {version!r}: a Kubernetes API version (v1, v2beta1, "
                         "v1alpha2)")
    return version


@dataclass(frozen=True)
class Resource:
    """One kind of the project."""

    kind: str
    version: str
    webhook: bool = False
    spokes: tuple[str, ...] = ()
    conversion: bool = False

    @property
    def versions(self) -> tuple[str, ...]:
        """Every version: the storage (hub) version first."""
        return (self.version, *self.spokes)

    @property
    def lower(self) -> str:
        return self.kind.lower()

    @property
    def plural(self) -> str:
        return f"{self.lower}s"


@dataclass(frozen=True)
class Project:
    """What ``PROJECT`` records (module docstring)."""

    name: str
    group: str
    domain: str
    resources: tuple[Resource, ...] = field(default=())

    def __post_init__(self) -> None:
        if not _DNS_LABEL.fullmatch(self.name) or len(self.name) > 40:
            raise UsageError(f"project name {self.name!r}: lowercase letters, digits and '-', "
                             "starting with a letter, at most 40 (it names the package, the "
                             "image and the Kubernetes objects)")
        if keyword.iskeyword(self.package):
            raise UsageError(f"project name {self.name!r}: {self.package!r} is a Python keyword")
        if not _DNS_LABEL.fullmatch(self.group):
            raise UsageError(f"--group {self.group!r}: a DNS label (lowercase letters, digits "
                             "and '-'), the first part of the API group")
        if not _DNS_NAME.fullmatch(self.domain) or "." not in self.domain:
            raise UsageError(f"--domain {self.domain!r}: a DNS name with a dot (example.com)")

    @property
    def package(self) -> str:
        return self.name.replace("-", "_")

    @property
    def api_group(self) -> str:
        return f"{self.group}.{self.domain}"

    def resource(self, kind: str) -> Resource | None:
        return next((r for r in self.resources if r.kind == kind), None)

    def with_resource(self, res: Resource) -> Project:
        """This project with ``res`` (in the place of the kind's entry, else last)."""
        if self.resource(res.kind) is None:
            return replace(self, resources=(*self.resources, res))
        return replace(self, resources=tuple(res if r.kind == res.kind else r
                                             for r in self.resources))

    def dump(self) -> str:
        body = {"name": self.name, "package": self.package, "group": self.group,
                "domain": self.domain,
                "resources": [{"kind": r.kind, "version": r.version, "webhook": r.webhook,
                               "spokes": list(r.spokes), "conversion": r.conversion}
                              for r in self.resources]}
        return ("# Written by pyctrl init / create: the scaffold's record of this project "
                "(do not edit).\n" + yaml.safe_dump(body, sort_keys=False))


def load(root: Path) -> Project:
    """The project recorded in ``root/PROJECT`` (module docstring)."""
    text = read_old(root / PROJECT_FILE)
    if not text:
        raise UsageError(f"no {PROJECT_FILE} file in {root.resolve()}: run `pyctrl init` "
                         "first, or run this in the project's directory")
    try:
        body = yaml.safe_load(text)
        return Project(name=str(body["name"]), group=str(body["group"]),
                       domain=str(body["domain"]),
                       resources=tuple(Resource(str(r["kind"]), str(r["version"]),
                                                bool(r.get("webhook", False)),
                                                tuple(str(v) for v in r.get("spokes") or ()),
                                                bool(r.get("conversion", False)))
                                       for r in body.get("resources") or ()))
    except (yaml.YAMLError, KeyError, TypeError, AttributeError) as err:
        raise UsageError(f"{root / PROJECT_FILE}: not a pyctrl project record "
                         f"({type(err).__name__}: {err})") from None
