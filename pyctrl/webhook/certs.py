"""Deprecated: moved to :mod:`pyctrl.serving.certs` (this alias goes in the next release)."""

import warnings

from pyctrl.serving.certs import (
    CertificatePaths,
    generate_certs,
    issue_cert,
    new_ca,
)

__all__ = ["CertificatePaths", "generate_certs", "issue_cert", "new_ca"]

warnings.warn(f"{__name__} moved to pyctrl.serving.certs", DeprecationWarning, stacklevel=2)
