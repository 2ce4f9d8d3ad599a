"""pyctrl.frontend: HTTP(S) servers that idle or slow clients can not starve.

:class:`Frontend` accepts, TLS-handshakes and reads every connection on one asyncio event
loop thread and hands only complete requests to a few worker threads; a :data:`Route`
(cheap, on the loop) picks a :data:`Handler` (on a worker) or answers at once. The webhook
server and the Manager's metrics and probe servers are built on it.
"""

from pyctrl.frontend.http import (
    Handler,
    Headers,
    Reply,
    Request,
    RequestHead,
    Route,
    response,
    text,
)
from pyctrl.frontend.options import FrontendOptions
from pyctrl.frontend.server import Frontend

__all__ = ["Frontend", "FrontendOptions", "Handler", "Headers", "Reply", "Request", "RequestHead",
           "Route", "response", "text"]
