"""Errors of spark_collective, mirroring the Java ones (``io.sparkcollective.core.api``).

Every error but :class:`CollectiveUsageError` fails the group: the stage's tasks should let it propagate,
so that Spark retries the stage and a new group forms.
"""

from typing import Optional

__all__ = [
    "CollectiveError",
    "CollectiveUsageError",
    "VersionMismatchError",
    "PeerLostError",
    "RemoteFailureError",
    "CollectiveTimeoutError",
    "CollectiveMismatchError",
    "CollectiveCancelledError",
    "CollectiveAuthenticationError",
]


class CollectiveError(RuntimeError):
    """Base of every error of this package.

    ``rank`` is the rank the error names (the lost peer, the rank that failed first, the peer that did
    not answer), or ``None``.
    """

    def __init__(self, message: str, rank: Optional[int] = None):
        super().__init__(message)
        self.rank = rank


class CollectiveUsageError(CollectiveError, ValueError):
    """A bad argument or a call where none can be made; the group (if any) is unharmed."""


class VersionMismatchError(CollectiveUsageError):
    """This package and the plugin jar on the executor are of different versions."""


class PeerLostError(CollectiveError):
    """A peer, or the link to it, is gone (``rank`` says which)."""


class RemoteFailureError(CollectiveError):
    """Another rank failed and aborted the group (``rank`` says which); not this task's fault."""


class CollectiveTimeoutError(CollectiveError, TimeoutError):
    """A peer did not answer within the operation's deadline."""


class CollectiveMismatchError(CollectiveError):
    """Ranks called different operations, lengths, types or roots."""


class CollectiveCancelledError(CollectiveError):
    """This task was killed or cancelled by Spark while it waited."""


class CollectiveAuthenticationError(CollectiveError):
    """A peer or the executor's channel refused this one's credentials."""


#: Error kinds of the executor's replies, in the protocol's numbering.
BY_KIND = {
    1: CollectiveUsageError,
    2: PeerLostError,
    3: RemoteFailureError,
    4: CollectiveTimeoutError,
    5: CollectiveMismatchError,
    6: CollectiveCancelledError,
    7: CollectiveAuthenticationError,
    8: VersionMismatchError,
    9: CollectiveError,
}
