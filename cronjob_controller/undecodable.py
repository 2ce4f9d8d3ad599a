"""A stored CronJob that does not decode into :class:`~cronjob_controller.crd.CronJob`.

Contract of :meth:`UndecodableCronJobs.report` (called by the reconciler when the typed
lister's ``get`` raises :class:`pyctrl.Undecodable`: a value the schema would refuse, stored
past a laxer CRD or with the webhook off; see docs/DESIGN.md, "Undecodable objects"):

* No Job is created and nothing else about the CronJob is read: the cache holds only its
  metadata and the decode error.
* ``Ready=False``, reason ``InvalidSpec``, with a message naming the field and the problem
  (``spec.concurrencyPolicy: Invalid enum value 'Sometimes' ...``), is written as one merge
  patch of the status subresource holding only ``conditions`` and ``observedGeneration``,
  with the stand-in's ``resourceVersion`` as a precondition (a 409 means a newer version is
  on its way to the cache: nothing is written, its event brings the key back). Then one
  Warning ``InvalidSpec`` Event with the same message.
* Once per distinct problem (the :class:`~cronjob_controller.reporting.Reporter`'s memory,
  shared with the validation path): the status write's own update event, a resync or a Job
  event brings the key back and finds it reported, so nothing is written again and nothing
  is requeued. Fixing the object makes the next sync an ordinary one, which forgets the
  report and writes ``Ready`` from the spec.
* A failed write (other than 409/404) raises: the sync is retried with the queue's backoff.
"""

from __future__ import annotations

from typing import Any

import structlog

from cronjob_controller import api
from cronjob_controller.reporting import Reporter, truncate
from pyctrl import Clock, Result, Undecodable
from pyctrl.errors import Conflict, NotFound
from pyctrl.kube import Client, format_time

__all__ = ["UndecodableCronJobs"]

log = structlog.get_logger(__name__)


def problem_message(err: Undecodable) -> str:
    """The condition and Event message for ``err``."""
    return truncate(f"{err.field or 'the object'}: {err.problem} (the stored CronJob does "
                    "not match its schema; no Job is created until it is fixed)")


class UndecodableCronJobs:
    """Reports undecodable CronJobs (see module docstring)."""

    def __init__(self, client: Client, reporter: Reporter, clock: Clock) -> None:
        self.client = client
        self.reporter = reporter
        self.clock = clock

    def report(self, key: str, err: Undecodable) -> Result | None:
        """Say what is wrong with the CronJob ``key`` (status and Event), once."""
        message = problem_message(err)
        reason = api.REASON_INVALID_SPEC
        if self.reporter.reported(key, reason) == message:
            return None
        condition: dict[str, Any] = {
            "type": api.CONDITION_READY, "status": "False", "reason": reason,
            "message": message, "lastTransitionTime": format_time(self.clock.now())}
        if err.generation:
            condition["observedGeneration"] = err.generation
        body: dict[str, Any] = {"status": {"conditions": [condition]}}
        if err.generation:
            body["status"]["observedGeneration"] = err.generation
        if err.resource_version:
            body["metadata"] = {"resourceVersion": err.resource_version}
        try:
            self.client.patch(api.CRONJOBS, err.name, body, err.namespace, patch_type="merge",
                              subresource="status")
        except (Conflict, NotFound):
            # A newer version (or the delete) is on its way to the cache; its event brings
            # the key back.
            log.info("undecodable cronjob changed since the cache saw it", key=key)
            return None
        involved = {"apiVersion": err.api_version or api.API_VERSION, "kind": api.KIND,
                    "metadata": {"name": err.name, "namespace": err.namespace, "uid": err.uid,
                                 "resourceVersion": err.resource_version}}
        if self.reporter.once(key, involved, "Warning", reason, message):
            log.info("undecodable cronjob", key=key, path=err.path, problem=err.problem)
        return None
