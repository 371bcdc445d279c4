"""The unified test format's JSON schema (1.x), written from the spec's Test Format section.

Each definition mirrors one structure of ``unified-test-format.md`` ("Top-level Fields",
"runOnRequirement", "entity", "collectionData", "test", "operation", "expectedError",
"expectedEventsForClient", "expectedLogMessage", ...), with the same required fields, types,
minimums and mutual exclusions the official ``schema-1.x.json`` states. Checked by
:mod:`spec_tests.unified.jsonschema_lite`.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["DEFINITIONS", "ROOT"]

_VERSION = r"^[0-9]+(\.[0-9]+){1,2}$"


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/definitions/{name}"}


def _obj(required: tuple[str, ...] = (), /, **properties: Any) -> dict[str, Any]:
    """A closed object (no additional properties) with these properties."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": list(required),
        "properties": properties,
    }


def _array_of(items: dict[str, Any], min_items: int = 1) -> dict[str, Any]:
    return {"type": "array", "minItems": min_items, "items": items}


_STRING: Final = {"type": "string"}
_BOOL: Final = {"type": "boolean"}
_INT: Final = {"type": "integer"}
_OBJECT: Final = {"type": "object"}
_ANY: Final[dict[str, Any]] = {}

_OBSERVABLE_EVENTS: Final = [
    "commandStartedEvent", "commandSucceededEvent", "commandFailedEvent",
    "poolCreatedEvent", "poolReadyEvent", "poolClearedEvent", "poolClosedEvent",
    "connectionCreatedEvent", "connectionReadyEvent", "connectionClosedEvent",
    "connectionCheckOutStartedEvent", "connectionCheckOutFailedEvent",
    "connectionCheckedOutEvent", "connectionCheckedInEvent",
    "serverDescriptionChangedEvent", "serverHeartbeatStartedEvent",
    "serverHeartbeatSucceededEvent", "serverHeartbeatFailedEvent",
    "topologyDescriptionChangedEvent", "topologyOpeningEvent", "topologyClosedEvent",
]
_SERVER_TYPES: Final = [
    "Standalone", "Mongos", "PossiblePrimary", "RSPrimary", "RSSecondary", "RSOther",
    "RSArbiter", "RSGhost", "LoadBalancer", "Unknown",
]
_LOG_COMPONENTS: Final = ["command", "topology", "serverSelection", "connection"]

_PLACEHOLDER: Final = _obj(("$$placeholder",), **{"$$placeholder": _ANY})
_KMS_VALUE: Final = {"anyOf": [_STRING, _PLACEHOLDER]}
_KMS_BYTES: Final = {"anyOf": [_STRING, _OBJECT]}


def _kms(**fields: Any) -> dict[str, Any]:
    return _obj(**fields)


_KMS_PROVIDERS: Final = {
    "type": "object",
    "additionalProperties": False,
    "patternProperties": {
        r"^aws(:[a-zA-Z0-9_]+)?$": _kms(
            accessKeyId=_KMS_VALUE, secretAccessKey=_KMS_VALUE, sessionToken=_KMS_VALUE),
        r"^azure(:[a-zA-Z0-9_]+)?$": _kms(
            tenantId=_KMS_VALUE, clientId=_KMS_VALUE, clientSecret=_KMS_VALUE,
            identityPlatformEndpoint=_KMS_VALUE, accessToken=_KMS_VALUE),
        r"^gcp(:[a-zA-Z0-9_]+)?$": _kms(
            email=_KMS_VALUE, privateKey=_KMS_VALUE, endpoint=_KMS_VALUE,
            accessToken=_KMS_VALUE),
        r"^kmip(:[a-zA-Z0-9_]+)?$": _kms(endpoint=_KMS_VALUE),
        r"^local(:[a-zA-Z0-9_]+)?$": _kms(key=_KMS_BYTES),
    },
}

_SERVER_DESCRIPTION: Final = _obj(type={"type": "string", "enum": _SERVER_TYPES})
_CONNECTION_EVENT_FIELDS: Final = {
    "commandName": _STRING, "databaseName": _STRING,
    "hasServiceId": _BOOL, "hasServerConnectionId": _BOOL,
}


def _one_event(**events: Any) -> dict[str, Any]:
    """Exactly one key naming the event type."""
    return {**_obj(**events), "minProperties": 1, "maxProperties": 1}


def _events_for(event_type: str | None, event_def: str) -> dict[str, Any]:
    """expectedEventsForClient: the events allowed by this eventType (None: omitted)."""
    events = {"properties": {"events": {"items": _ref(event_def)}}}
    if event_type is None:
        return {**events, "not": {"required": ["eventType"]}}
    return {**events, "required": ["eventType"],
            "properties": {**events["properties"], "eventType": {"const": event_type}}}


def _exclusive(*pairs: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"not": {"required": list(pair)}} for pair in pairs]


DEFINITIONS: Final[dict[str, dict[str, Any]]] = {
    "version": {"type": "string", "pattern": _VERSION},
    "runOnRequirement": {
        **_obj(
            minServerVersion=_ref("version"),
            maxServerVersion=_ref("version"),
            topologies=_array_of({"type": "string", "enum": [
                "single", "replicaset", "sharded", "sharded-replicaset", "load-balanced"]}),
            serverless={"type": "string", "enum": ["require", "forbid", "allow"]},
            serverParameters={"type": "object", "minProperties": 1},
            auth=_BOOL,
            authMechanism=_STRING,
            csfle={"oneOf": [_BOOL, _obj(minLibmongocryptVersion=_ref("version"))]},
        ),
        "minProperties": 1,
    },
    "logSeverityLevel": {"type": "string", "enum": [
        "emergency", "alert", "critical", "error", "warning", "notice", "info", "debug",
        "trace"]},
    "serverApi": _obj(("version",), version=_STRING, strict=_BOOL, deprecationErrors=_BOOL),
    "collectionOrDatabaseOptions": _obj(
        readConcern=_OBJECT, readPreference=_OBJECT, writeConcern=_OBJECT, timeoutMS=_INT),
    "storeEventsAsEntity": _obj(("id", "events"), id=_STRING,
                                events=_array_of({"type": "string", "enum": _OBSERVABLE_EVENTS})),
    "entity": {
        **_obj(
            client=_obj(
                ("id",),
                id=_STRING,
                uriOptions=_OBJECT,
                useMultipleMongoses=_BOOL,
                observeEvents=_array_of({"type": "string", "enum": _OBSERVABLE_EVENTS}),
                ignoreCommandMonitoringEvents=_array_of(_STRING),
                observeSensitiveCommands=_BOOL,
                storeEventsAsEntities=_array_of(_ref("storeEventsAsEntity")),
                observeLogMessages={
                    **_obj(**{c: _ref("logSeverityLevel") for c in _LOG_COMPONENTS}),
                    "minProperties": 1,
                },
                observeTracingMessages=_obj(enableCommandPayload=_BOOL),
                serverApi=_ref("serverApi"),
                autoEncryptOpts=_OBJECT,
                awaitMinPoolSizeMS=_INT,
            ),
            clientEncryption=_obj(
                ("id", "clientEncryptionOpts"),
                id=_STRING,
                clientEncryptionOpts=_obj(
                    ("keyVaultClient", "keyVaultNamespace", "kmsProviders"),
                    keyVaultClient=_STRING,
                    keyVaultNamespace=_STRING,
                    kmsProviders=_KMS_PROVIDERS,
                    keyExpirationMS=_INT,
                ),
            ),
            database=_obj(("id", "client", "databaseName"), id=_STRING, client=_STRING,
                          databaseName=_STRING,
                          databaseOptions=_ref("collectionOrDatabaseOptions")),
            collection=_obj(("id", "database", "collectionName"), id=_STRING,
                            database=_STRING, collectionName=_STRING,
                            collectionOptions=_ref("collectionOrDatabaseOptions")),
            session=_obj(("id", "client"), id=_STRING, client=_STRING,
                         sessionOptions=_OBJECT),
            bucket=_obj(("id", "database"), id=_STRING, database=_STRING,
                        bucketOptions=_OBJECT),
            stream=_obj(("id", "hexBytes"), id=_STRING,
                        hexBytes={"type": "string", "pattern": "^([0-9A-Fa-f]{2})*$"}),
            thread=_obj(("id",), id=_STRING),
        ),
        "minProperties": 1,
        "maxProperties": 1,
    },
    "collectionData": _obj(
        ("collectionName", "databaseName", "documents"),
        collectionName=_STRING, databaseName=_STRING, createOptions=_OBJECT,
        documents={"type": "array", "items": _OBJECT},
    ),
    "expectedError": {
        **_obj(
            isError={"type": "boolean", "const": True},
            isClientError=_BOOL,
            isTimeoutError=_BOOL,
            errorContains=_STRING,
            errorCode=_INT,
            errorCodeName=_STRING,
            errorLabelsContain=_array_of(_STRING),
            errorLabelsOmit=_array_of(_STRING),
            writeErrors=_OBJECT,
            writeConcernErrors=_array_of(_OBJECT),
            errorResponse=_OBJECT,
            expectResult=_ANY,
        ),
        "minProperties": 1,
    },
    "operation": {
        **_obj(
            ("name", "object"),
            name=_STRING,
            object=_STRING,
            arguments=_OBJECT,
            ignoreResultAndError=_BOOL,
            expectError=_ref("expectedError"),
            expectResult=_ANY,
            saveResultAsEntity=_STRING,
        ),
        "allOf": _exclusive(
            ("expectError", "expectResult"),
            ("expectError", "saveResultAsEntity"),
            ("ignoreResultAndError", "expectResult"),
            ("ignoreResultAndError", "expectError"),
            ("ignoreResultAndError", "saveResultAsEntity"),
        ),
    },
    "expectedEventsForClient": {
        **_obj(
            ("client", "events"),
            client=_STRING,
            eventType={"type": "string", "enum": ["command", "cmap", "sdam"]},
            events={"type": "array"},
            ignoreExtraEvents=_BOOL,
        ),
        "oneOf": [
            _events_for(None, "expectedCommandEvent"),
            _events_for("command", "expectedCommandEvent"),
            _events_for("cmap", "expectedCmapEvent"),
            _events_for("sdam", "expectedSdamEvent"),
        ],
    },
    "expectedCommandEvent": _one_event(
        commandStartedEvent=_obj(command=_OBJECT, **_CONNECTION_EVENT_FIELDS),
        commandSucceededEvent=_obj(reply=_OBJECT, **_CONNECTION_EVENT_FIELDS),
        commandFailedEvent=_obj(**_CONNECTION_EVENT_FIELDS),
    ),
    "expectedCmapEvent": _one_event(
        poolCreatedEvent=_obj(),
        poolReadyEvent=_obj(),
        poolClearedEvent=_obj(hasServiceId=_BOOL, interruptInUseConnections=_BOOL),
        poolClosedEvent=_obj(),
        connectionCreatedEvent=_obj(),
        connectionReadyEvent=_obj(),
        connectionClosedEvent=_obj(reason=_STRING),
        connectionCheckOutStartedEvent=_obj(),
        connectionCheckOutFailedEvent=_obj(reason=_STRING),
        connectionCheckedOutEvent=_obj(),
        connectionCheckedInEvent=_obj(),
    ),
    "expectedSdamEvent": _one_event(
        serverDescriptionChangedEvent=_obj(previousDescription=_SERVER_DESCRIPTION,
                                           newDescription=_SERVER_DESCRIPTION),
        topologyDescriptionChangedEvent=_obj(previousDescription=_OBJECT,
                                             newDescription=_OBJECT),
        serverHeartbeatStartedEvent=_obj(awaited=_BOOL),
        serverHeartbeatSucceededEvent=_obj(awaited=_BOOL),
        serverHeartbeatFailedEvent=_obj(awaited=_BOOL),
        topologyOpeningEvent=_obj(),
        topologyClosedEvent=_obj(),
    ),
    "expectedLogMessagesForClient": _obj(
        ("client", "messages"),
        client=_STRING,
        messages={"type": "array", "items": _ref("expectedLogMessage")},
        ignoreExtraMessages=_BOOL,
        ignoreMessages={"type": "array", "items": _ref("expectedLogMessage")},
    ),
    "expectedLogMessage": _obj(
        ("level", "component", "data"),
        level=_ref("logSeverityLevel"),
        component={"type": "string", "enum": _LOG_COMPONENTS},
        data=_OBJECT,
        failureIsRedacted=_BOOL,
    ),
    "expectedTracingSpans": _obj(
        ("client", "spans"),
        client=_STRING,
        ignoreExtraSpans=_BOOL,
        spans={"type": "array", "items": _ref("tracingSpan")},
    ),
    # The schema files call a span's attributes "tags"; the format and the open-telemetry
    # tests call them "attributes".
    "tracingSpan": {"anyOf": [
        _obj(("name", "tags"), name=_STRING, tags=_OBJECT,
             nested=_array_of(_ref("tracingSpan"))),
        _obj(("name", "attributes"), name=_STRING, attributes=_OBJECT,
             nested=_array_of(_ref("tracingSpan"))),
    ]},
    "test": _obj(
        ("description", "operations"),
        description=_STRING,
        runOnRequirements=_array_of(_ref("runOnRequirement")),
        skipReason=_STRING,
        operations={"type": "array", "items": _ref("operation")},
        expectEvents=_array_of(_ref("expectedEventsForClient")),
        expectLogMessages=_array_of(_ref("expectedLogMessagesForClient")),
        # The format says one object; the open-telemetry tests write a list of them.
        expectTracingMessages={"anyOf": [_ref("expectedTracingSpans"),
                                         _array_of(_ref("expectedTracingSpans"))]},
        outcome=_array_of(_ref("collectionData")),
    ),
}

ROOT: Final = _obj(
    ("description", "schemaVersion", "tests"),
    description=_STRING,
    schemaVersion=_ref("version"),
    runOnRequirements=_array_of(_ref("runOnRequirement")),
    createEntities=_array_of(_ref("entity")),
    initialData=_array_of(_ref("collectionData")),
    tests=_array_of(_ref("test")),
    _yamlAnchors=_OBJECT,
)
