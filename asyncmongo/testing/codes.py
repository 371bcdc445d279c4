"""Server error codes and their ``codeName`` as mongod reports them."""

from __future__ import annotations

CODE_NAMES = {
    1: "InternalError",
    2: "BadValue",
    6: "HostUnreachable",
    7: "HostNotFound",
    8: "UnknownError",
    9: "FailedToParse",
    11: "UserNotFound",
    13: "Unauthorized",
    14: "TypeMismatch",
    18: "AuthenticationFailed",
    20: "IllegalOperation",
    24: "LockTimeout",
    26: "NamespaceNotFound",
    27: "IndexNotFound",
    43: "CursorNotFound",
    48: "NamespaceExists",
    50: "MaxTimeMSExpired",
    59: "CommandNotFound",
    64: "WriteConcernFailed",
    72: "InvalidOptions",
    73: "InvalidNamespace",
    76: "NoReplicationEnabled",
    85: "IndexOptionsConflict",
    86: "IndexKeySpecsConflict",
    89: "NetworkTimeout",
    91: "ShutdownInProgress",
    95: "NotSecondary",
    96: "OperationFailed",
    100: "UnsatisfiableWriteConcern",
    112: "WriteConflict",
    115: "CommandNotSupported",
    123: "NotAReplicaSet",
    125: "CommandFailed",
    134: "ReadConcernMajorityNotAvailableYet",
    175: "QueryPlanKilled",
    186: "ClientMetadataCannotBeMutated",
    189: "PrimarySteppedDown",
    237: "CursorKilled",
    239: "SnapshotTooOld",
    246: "SnapshotUnavailable",
    251: "NoSuchTransaction",
    262: "ExceededTimeLimit",
    263: "OperationNotSupportedInTransaction",
    267: "PreparedTransactionInProgress",
    322: "APIVersionError",
    323: "APIStrictError",
    324: "APIDeprecationError",
    325: "APIMismatchError",
    352: "UnsupportedOpQueryCommand",
    9001: "SocketException",
    10107: "NotWritablePrimary",
    11000: "DuplicateKey",
    11600: "InterruptedAtShutdown",
    11601: "Interrupted",
    11602: "InterruptedDueToReplStateChange",
    13435: "NotPrimaryNoSecondaryOk",
    13436: "NotPrimaryOrSecondary",
}


#: "Not primary" errors (SDAM spec): mongod 4.4+ always attaches its topologyVersion to them
#: so drivers can ignore stale ones.
NOT_PRIMARY_CODES = frozenset({189, 10058, 10107, 11602, 13435, 13436})
#: "Node is shutting down" errors: mongod attaches topologyVersion to these only in quiesce
#: mode, so a plain shutdown error is never stale and marks the server Unknown (SDAM).
SHUTDOWN_CODES = frozenset({91, 11600})
#: Both kinds: the state-change errors of the SDAM spec.
STATE_CHANGE_CODES = NOT_PRIMARY_CODES | SHUTDOWN_CODES


def code_name(code: int) -> str:
    """mongod's ``codeName``; codes without a name are reported as ``Location<code>``."""
    return CODE_NAMES.get(code, f"Location{code}")
