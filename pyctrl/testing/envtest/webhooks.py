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

from pyctrl.testing.envtest.webhook_install import (
    InstalledWebhooks,
    WebhookInstallError,
    install_webhooks,
)
from pyctrl.testing.envtest.webhook_rewrite import (
    CA_INJECTION_ANNOTATIONS,
    NAMESPACE_NAME_LABEL,
    WEBHOOK_KINDS,
    namespace_selector,
    rewrite_conversion_webhook,
    rewrite_webhook_configuration,
    webhook_calls,
    webhook_configurations,
)
from pyctrl.testing.envtest.webhook_server import LocalWebhookServer, install_serving_cert

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
