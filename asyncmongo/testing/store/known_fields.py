"""The top-level fields mongod's command parsers accept (its IDL definitions).

A command carrying any other field fails with 40415, "BSON field '<command>.<field>' is an
unknown field.", before it runs: a misspelt option is an error, never silently ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asyncmongo.testing.store.errors import StoreError

#: mongod's generic_argument.idl: what any command may carry (drivers, mongos, replication).
GENERIC_ARGUMENTS = frozenset({
    "$db", "apiVersion", "apiStrict", "apiDeprecationErrors", "maxTimeMS", "readConcern",
    "writeConcern", "lsid", "txnNumber", "autocommit", "startTransaction", "stmtId",
    "comment", "$readPreference", "$clusterTime", "$audit", "$client", "$configServerState",
    "allowImplicitCollectionCreation", "$oplogQueryData", "$queryOptions", "$replData",
    "databaseVersion", "shardVersion", "tracking_info", "coordinator", "maxTimeMSOpOnly",
    "usesDefaultMaxTimeMS", "readOnly", "mayBypassWriteBlocking", "$gleStats",
    "clientOperationKey", "$configTime", "$topologyTime", "help", "rawData",
    "versionContext", "expectPrefix", "txnRetryCounter", "isClusterWideOperation",
})

#: mongod's aggregate.idl.
AGGREGATE_FIELDS = frozenset({
    "aggregate", "pipeline", "explain", "allowDiskUse", "cursor", "bypassDocumentValidation",
    "collation", "hint", "let", "needsMerge", "fromMongos", "fromRouter",
    "$_requestReshardingResumeToken", "isMapReduceCommand", "collectionUUID",
    "$_passthroughToShard", "$_generateV2ResumeTokens", "encryptionInformation", "exchange",
    "runtimeConstants", "$_isClusterQueryWithoutShardKeyCmd", "includeQueryStatsMetrics",
    "$_requestGlobalIndexResumeToken",
})

#: mongod's create.idl (the create command's options).
CREATE_FIELDS = frozenset({
    "create", "capped", "autoIndexId", "idIndex", "size", "max", "storageEngine", "validator",
    "validationLevel", "validationAction", "indexOptionDefaults", "viewOn", "pipeline",
    "collation", "changeStreamPreAndPostImages", "timeseries", "clusteredIndex",
    "recordIdsReplicated", "expireAfterSeconds", "encryptedFields", "temp", "flags",
})


def check_fields(command: Mapping[str, Any], accepted: frozenset[str]) -> None:
    """Refuse the first field of ``command`` that is neither in ``accepted`` nor generic."""
    name = next(iter(command))
    for field in command:
        if field not in accepted and field not in GENERIC_ARGUMENTS:
            raise StoreError(40415, f"BSON field '{name}.{field}' is an unknown field.")
