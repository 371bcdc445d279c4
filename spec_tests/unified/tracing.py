"""observeTracingMessages and expectTracingMessages: a client's spans, checked as a tree.

A client entity with ``observeTracingMessages`` traces to a TracerProvider of its own whose
in-memory exporter keeps its finished spans (the OpenTelemetry SDK, a test dependency), so
each client's spans are its own. ``enableCommandPayload`` turns ``db.query.text`` on, long
enough that no command of the tests is cut.

Checking (unified test format, expectTracingMessages): the client's root spans in start
order match ``spans`` (with ``ignoreExtraSpans``, as a subsequence), each span's name and
attributes (extra attributes allowed) and, recursively, its ``nested`` spans against its
children. OpenTelemetry integer attributes are int64, so they are matched as longs; the
``db.mongodb.lsid`` attribute (the lsid as Extended JSON) is matched as the document.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from asyncmongo.bson import Int64
from asyncmongo.bson.json_util import loads as json_loads
from spec_tests.unified.errors import Unsupported
from spec_tests.unified.matcher import MatchContext, MatchError, match

__all__ = ["SpanRecorder", "check_tracing_messages"]

#: db.query.text with enableCommandPayload: no command of the tests comes near it.
QUERY_TEXT_MAX_LENGTH: Final = 1_000_000


class SpanRecorder:
    """An in-memory exporter behind a TracerProvider of one client entity."""

    def __init__(self, enable_command_payload: bool) -> None:
        try:
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor
            from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
                InMemorySpanExporter,
            )
        except ImportError:
            raise Unsupported("observeTracingMessages needs opentelemetry-sdk (the test "
                              "extra)") from None
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.query_text_max_length = QUERY_TEXT_MAX_LENGTH if enable_command_payload else 0

    def client_option(self) -> dict[str, Any]:
        """The client's ``tracing`` option."""
        return {"enabled": True, "query_text_max_length": self.query_text_max_length,
                "tracer_provider": self.provider}

    def roots(self) -> list[_Node]:
        """The finished spans as trees, roots and children in start order."""
        spans = sorted(self.exporter.get_finished_spans(), key=lambda s: s.start_time or 0)
        nodes = {span.context.span_id: _Node(span) for span in spans}
        roots = []
        for span in spans:
            node = nodes[span.context.span_id]
            parent = nodes.get(span.parent.span_id) if span.parent is not None else None
            if parent is None:
                roots.append(node)
            else:
                parent.children.append(node)
        return roots


class _Node:
    __slots__ = ("attributes", "children", "name")

    def __init__(self, span: Any) -> None:
        self.name: str = span.name
        self.attributes = {key: _as_bson(key, value)
                           for key, value in (span.attributes or {}).items()}
        self.children: list[_Node] = []

    def __repr__(self) -> str:
        return f"{self.name}{self.children or ''}"


def _as_bson(key: str, value: Any) -> Any:
    if key == "db.mongodb.lsid" and isinstance(value, str):
        return json_loads(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return Int64(value)
    return value


def check_tracing_messages(expected: Mapping[str, Any], recorder: SpanRecorder,
                           ctx: MatchContext | None) -> None:
    """One expectTracingMessages entry against the client's recorded spans."""
    ignore_extra = bool(expected.get("ignoreExtraSpans", False))
    _match_spans(expected["spans"], recorder.roots(), ignore_extra, ctx, "spans")


def _match_spans(wanted: Sequence[Mapping[str, Any]], actual: Sequence[_Node],
                 ignore_extra: bool, ctx: MatchContext | None, path: str) -> None:
    if not ignore_extra and len(wanted) != len(actual):
        raise MatchError(f"{path}: expected {len(wanted)} spans "
                         f"{[w['name'] for w in wanted]}, observed {len(actual)}: {actual!r}")
    remaining = list(actual)
    for index, want in enumerate(wanted):
        where = f"{path}[{index}] {want['name']}"
        while True:
            if not remaining:
                raise MatchError(f"{where}: no matching span among {actual!r}")
            node = remaining.pop(0)
            try:
                _match_span(want, node, ignore_extra, ctx, where)
                break
            except MatchError:
                if not ignore_extra:
                    raise


def _match_span(want: Mapping[str, Any], node: _Node, ignore_extra: bool,
                ctx: MatchContext | None, path: str) -> None:
    if want["name"] != node.name:
        raise MatchError(f"{path}: span name {node.name!r}, expected {want['name']!r}")
    attributes = want["attributes"] if "attributes" in want else want.get("tags", {})
    match(attributes, node.attributes, ctx, root=True, path=f"{path} attributes")
    _match_spans(want.get("nested", ()), node.children, ignore_extra, ctx, f"{path} nested")
