"""Leader election over a ``coordination.k8s.io/v1`` Lease (client-go's leaderelection).

Only one replica's controllers work at a time: :class:`LeaderElector` campaigns on a
:class:`ResourceLock` (normally a :class:`LeaseLock`), renews it, steps down (fences) before
anyone else could take over when renewing fails, and releases it on a clean stop.
"""

from pyctrl.leaderelection.elector import LeaderElector
from pyctrl.leaderelection.identity import default_identity
from pyctrl.leaderelection.lease_lock import LeaseLock
from pyctrl.leaderelection.lock import LeaderElectionRecord, ResourceLock
from pyctrl.leaderelection.options import LeaderCallbacks, LeaderElectionOptions

__all__ = [
    "LeaderCallbacks",
    "LeaderElectionOptions",
    "LeaderElectionRecord",
    "LeaderElector",
    "LeaseLock",
    "ResourceLock",
    "default_identity",
]
