"""Sample kinds for the pyctrl.api tests (unit: schema and CRD shape; integration: the real
apiserver accepts the generated CRD and enforces it). ``Website`` has two versions; v1 is
stored, v1alpha1 is served, deprecated, and converted by a webhook."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pyctrl import api
from pyctrl.api import (
    ListType,
    Maximum,
    MaxItems,
    MaxLength,
    Minimum,
    MinLength,
    Pattern,
    PrinterColumn,
    Rule,
    Scale,
    ServiceReference,
    WebhookConversion,
)

CONVERSION = WebhookConversion(service=ServiceReference("web-system", "web-webhook"))
HOST = Annotated[str, MinLength(1), MaxLength(253),
                 Pattern(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"), "A DNS name."]


class Route(api.Struct):
    path: Annotated[str, MaxLength(256), Pattern("^/")]
    port: Annotated[api.Int32, Minimum(1), Maximum(65535)] = 80


class WebsiteSpec(api.Struct):
    __rules__ = (Rule("!has(self.maxReplicas) || self.replicas <= self.maxReplicas",
                      message="replicas must not exceed maxReplicas", field_path=".replicas"),)
    host: HOST
    image: Annotated[str, MaxLength(512)]
    replicas: Annotated[api.Int32, Minimum(0), Maximum(100)] = 1
    max_replicas: Annotated[api.Int32, Minimum(0), Maximum(100)] | None = None
    tier: Literal["free", "paid"] = "free"
    routes: Annotated[list[Route], ListType.map("path"), MaxItems(16),
                      Rule("self.all(r, r.path.size() > 0)")] = api.field(default_factory=list)
    pod: api.PodTemplateSpec | None = None


class WebsiteStatus(api.Struct):
    replicas: api.Int32 | None = None
    selector: str = ""
    url: str = ""
    published_at: datetime | None = None
    observed_generation: api.Int64 | None = None
    conditions: Annotated[list[api.Condition], ListType.map("type")] = api.field(
        default_factory=list)


COLUMNS = (PrinterColumn("Host", "string", ".spec.host"),
           PrinterColumn("Replicas", "integer", ".spec.replicas"),
           PrinterColumn("URL", "string", ".status.url", priority=1),
           PrinterColumn("Age", "date", ".metadata.creationTimestamp"))


@api.kind("web.pyctrl.io/v1", "Website", short_names=("ws",), categories=("pyctrl", "web"),
          printer_columns=COLUMNS, conversion=CONVERSION, description="A web site.",
          scale=Scale(label_selector_path=".status.selector"),
          rules=(Rule("self.metadata.name.size() <= 40", message="name too long"),))
class Website(api.Object):
    spec: WebsiteSpec
    status: WebsiteStatus = api.field(default_factory=WebsiteStatus)


class WebsiteSpecV1alpha1(api.Struct):
    host: HOST
    image: Annotated[str, MaxLength(512)]
    replicas: Annotated[api.Int32, Minimum(0), Maximum(100)] = 1


@api.kind("web.pyctrl.io/v1alpha1", "Website", short_names=("ws",),
          categories=("pyctrl", "web"), conversion=CONVERSION, storage=False, deprecated=True,
          deprecation_warning="web.pyctrl.io/v1alpha1 Website is deprecated; use v1",
          printer_columns=COLUMNS[:1])
class WebsiteV1alpha1(api.Object):
    spec: WebsiteSpecV1alpha1
    status: WebsiteStatus = api.field(default_factory=WebsiteStatus)


@api.kind("web.pyctrl.io/v1", "Cluster", scope="Cluster", status_subresource=False)
class Cluster(api.Object):
    spec: dict[str, str] = api.field(default_factory=dict)


def website_from_v1alpha1(old: WebsiteV1alpha1) -> Website:
    spec = old.spec
    return Website(spec=WebsiteSpec(host=spec.host, image=spec.image, replicas=spec.replicas),
                   status=old.status)


def website_to_v1alpha1(new: Website) -> WebsiteV1alpha1:
    spec = new.spec
    return WebsiteV1alpha1(spec=WebsiteSpecV1alpha1(host=spec.host, image=spec.image,
                                                    replicas=spec.replicas),
                           status=new.status)


def website_conversion() -> api.Conversion[Website]:
    """v1 is the hub; v1alpha1 lacks maxReplicas, tier, routes and pod."""
    conversion = api.Conversion(Website)
    conversion.spoke(WebsiteV1alpha1, to_hub=website_from_v1alpha1,
                     from_hub=website_to_v1alpha1)
    return conversion
