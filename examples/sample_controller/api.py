"""The Foo kind (samplecontroller.pyctrl.io/v1alpha1): a Deployment name and a replica count.

``python -m pyctrl gen crd examples.sample_controller.api --out
examples/sample_controller/config/crd`` writes its CustomResourceDefinition from these
classes. Every field is optional in the schema, as upstream's: an empty ``deploymentName``
reaches the controller, which refuses it (TerminalError).
"""

from __future__ import annotations

from typing import Annotated

from pyctrl import api


class FooSpec(api.Struct):
    """The Deployment a Foo wants."""

    deployment_name: Annotated[str, "The name of the Deployment the Foo owns."] = ""
    replicas: Annotated[api.Int32, api.Minimum(0), api.Maximum(10),
                        "How many nginx pods the Deployment runs."] | None = None


class FooStatus(api.Struct):
    """What the controller last saw of the Deployment."""

    available_replicas: Annotated[api.Int32, "The Deployment's available replicas."] \
        | None = None


@api.kind("samplecontroller.pyctrl.io/v1alpha1", "Foo", printer_columns=(
    api.PrinterColumn("Deployment", "string", ".spec.deploymentName"),
    api.PrinterColumn("Replicas", "integer", ".spec.replicas"),
    api.PrinterColumn("Available", "integer", ".status.availableReplicas"),
), description="A Foo: a Deployment of nginx pods it owns, scaled to spec.replicas.")
class Foo(api.Object):
    spec: FooSpec = api.field(default_factory=FooSpec)
    status: FooStatus = api.field(default_factory=FooStatus)


FOOS = api.resource_for(Foo)
