"""Active-active sharding on Kubernetes Leases (after timebertt/kubernetes-controller-sharding).

Every replica holds its own shard Lease (:mod:`.lease`, renewed like leader election); the
leader runs the :class:`Sharder`, which keeps a consistent-hash ring (:mod:`.ring`) of the
live shards and labels each object with its shard; each shard's informers list/watch only
objects carrying its label, and its reconciler (:class:`ShardReconciler`) hands an object
over (drain handshake) before the sharder gives it to another shard. Enable it with
``manager.add_extension(Sharding(ShardingOptions(controller=..., shard_id=..., resource=...)))``
(:mod:`.extension`) before building the controllers. A command-line helper that creates an
owned object outside any shard (a manual run) hands it to its owner's shard with
:func:`add_to_handover`.
"""

from pyctrl.sharding.extension import Sharding
from pyctrl.sharding.lease import ShardLeaseLock, ShardMembership
from pyctrl.sharding.options import ShardingOptions
from pyctrl.sharding.owned import add_to_handover
from pyctrl.sharding.ring import HashRing
from pyctrl.sharding.shard import ObjectSource, ShardReconciler
from pyctrl.sharding.sharder import Action, Sharder, plan
from pyctrl.sharding.watch import ShardWatch

__all__ = [
    "Action",
    "HashRing",
    "ObjectSource",
    "ShardLeaseLock",
    "ShardMembership",
    "ShardReconciler",
    "ShardWatch",
    "Sharder",
    "Sharding",
    "ShardingOptions",
    "add_to_handover",
    "plan",
]
