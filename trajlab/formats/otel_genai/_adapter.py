"""The OTel GenAI adapter: sniffing, loading span files and grouping spans by trace."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from .._base import Adapter, ParseContext, ParsedTrajectory, SourceUnit, load_json, read_jsonl
from .._typed import typed_rows
from ._spans import _dump, _envelope_spans, _is_envelope, _is_flat, _is_span, _Span, _span
from ._trace import _Trace

_FLAT_RE = re.compile(rb'"(gen_ai|llm|ai|openinference|traceloop)\.[A-Za-z0-9_.]+"\s*:')


class OtelGenAiAdapter(Adapter):
    name = "otel-genai"
    runner = "otel_genai"
    extensions = (".json", ".jsonl", ".ndjson")
    priority = 40
    description = "OpenTelemetry GenAI spans: OTLP/JSON, SDK span dumps, flattened span attributes"

    def sniff(self, path: Path, head_bytes: bytes) -> bool:
        if b'"resourceSpans"' in head_bytes or b'"resource_spans"' in head_bytes:
            return True
        if b'"spanContext"' in head_bytes and b'"attributes"' in head_bytes:
            return True
        if b'"context"' in head_bytes and b'"trace_id"' in head_bytes and b'"span_id"' in head_bytes:
            return True
        s = head_bytes.lstrip()
        return s[:1] == b"{" and bool(_FLAT_RE.search(s[:4096])) and b'"messages"' not in s[:64]

    def why_not(self, path: Path, head_bytes: bytes) -> str:
        return "no resourceSpans/spanContext/span context and no gen_ai.*/llm.*/ai.* attribute keys"

    def parse(self, unit: SourceUnit, ctx: ParseContext) -> Iterator[ParsedTrajectory]:
        path = unit.primary
        spans: list[_Span] = []
        if path.name.lower().endswith((".jsonl", ".ndjson")):
            for rec in read_jsonl(path, ctx):
                got = list(self._spans_of(rec.obj))
                good = [s for s in got if isinstance(s, _Span)]
                if not good:
                    ctx.reject(rec, f"line {rec.line}: no spans (not an OTLP envelope or span object)")
                    continue
                spans += good
                if len(good) < len(got):
                    self_bad = len(got) - len(good)
                    spans_note = f"line {rec.line}: {self_bad} unreadable span(s) skipped"
                    ctx.quarantine(path, spans_note, "schema", rec.raw, rec.line, rec.offset)
        else:
            data = self._load(path, ctx)
            if data is None:
                return
            items = data if isinstance(data, list) and not _is_flat(data) else [data]
            for i, item in enumerate(items):
                for sp in self._spans_of(item):
                    if isinstance(sp, _Span):
                        ctx.seen_ok()
                        spans.append(sp)
                    else:
                        ctx.quarantine(
                            path,
                            f"item {i}: not a span ({type(sp).__name__})",
                            "schema",
                            (_dump(sp) or "").encode(),
                            line=i,
                        )
        by_trace: dict[str, list[_Span]] = {}
        for sp in spans:
            by_trace.setdefault(sp.trace_id or path.stem, []).append(sp)
        traces = {trace_id: _Trace(group) for trace_id, group in by_trace.items()}
        if spans and not any(tr.relevant() for tr in traces.values()):
            # Nothing of the file would reach the lab (only embeddings, HTTP or other spans): keep the
            # file in the quarantine instead of counting its records as ingested (that also left the
            # ingest worker with a unit that had neither trajectories nor quarantine rows: IndexError).
            ctx.records_seen -= ctx.records_ingested
            ctx.records_ingested = 0
            why = f"{path.name}: no agent, model or tool spans among its {len(spans)} span(s)"
            try:
                raw = path.read_bytes()
            except OSError:
                raw = None
            ctx.quarantine(path, why, "schema", raw)
            return
        for trace_id, tr in traces.items():
            group = by_trace[trace_id]
            if not tr.relevant():
                continue
            tr.build()
            t = tr.trajectory(trace_id if any(s.trace_id for s in group) else None)
            native = trace_id if any(s.trace_id for s in group) else None
            typed_rows(t, tr.steps)
            yield ParsedTrajectory(
                t, tr.steps, native_key=native, locator=f"trace={native}" if native else None
            )

    @staticmethod
    def _spans_of(item: Any) -> Iterator[Any]:
        if _is_envelope(item):
            yield from _envelope_spans(item)
        elif _is_span(item):
            sp = _span(item)
            yield sp if sp is not None else item
        elif _is_flat(item):
            sp = _Span()
            sp.attrs = dict(item)
            sp.name = str(item.get("ai.operationId") or item.get("gen_ai.operation.name") or "span")
            yield sp
        else:
            yield item

    @staticmethod
    def _load(path: Path, ctx: ParseContext) -> Any:
        try:
            data = path.read_bytes()
            return orjson.loads(data)
        except (OSError, orjson.JSONDecodeError):
            pass
        # Python's ConsoleSpanExporter writes pretty-printed span objects one after another.
        try:
            text = data.decode("utf-8")
        except (UnicodeDecodeError, UnboundLocalError):
            return load_json(path, ctx)
        dec = json.JSONDecoder()
        objs, i = [], 0
        while True:
            while i < len(text) and text[i].isspace():
                i += 1
            if i >= len(text):
                break
            try:
                obj, i = dec.raw_decode(text, i)
            except (json.JSONDecodeError, RecursionError):  # nested deeper than the stdlib recurses
                return load_json(path, ctx)
            objs.append(obj)
        return objs if len(objs) > 1 and all(_is_span(o) for o in objs) else load_json(path, ctx)
