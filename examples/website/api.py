"""The Website kind: what a user asks for (spec) and what the operator reports (status).

``python -m pyctrl gen crd examples.website.api --out examples/website/config/crd`` writes
its CustomResourceDefinition from these classes.
"""

from __future__ import annotations

from typing import Annotated

from pyctrl import api


class WebsiteSpec(api.Struct):
    """The site to serve."""

    image: Annotated[str, api.MinLength(1), api.MaxLength(512),
                     "The container image that serves the site (listening on port)."]
    replicas: Annotated[api.Int32, api.Minimum(0), api.Maximum(20),
                        "How many pods serve the site."] = 1
    port: Annotated[api.Int32, api.Minimum(1), api.Maximum(65535),
                    "The port the container listens on; the Service exposes it."] = 8080


class WebsiteStatus(api.Struct):
    """What the operator last saw."""

    observed_generation: Annotated[api.Int64, api.Minimum(0),
                                   "The spec generation this status describes."] | None = None
    conditions: Annotated[list[api.Condition], api.ListType.map("type"), api.MaxItems(8),
                          "Ready: all replicas available."] = api.field(default_factory=list)


@api.kind("example.pyctrl.io/v1", "Website", short_names=("ws",), printer_columns=(
    api.PrinterColumn("Image", "string", ".spec.image"),
    api.PrinterColumn("Replicas", "integer", ".spec.replicas"),
    api.PrinterColumn("Ready", "string", '.status.conditions[?(@.type=="Ready")].status'),
), description="A website: a Deployment of an image and a Service in front of it.")
class Website(api.Object):
    spec: WebsiteSpec
    status: WebsiteStatus = api.field(default_factory=WebsiteStatus)


WEBSITES = api.resource_for(Website)

