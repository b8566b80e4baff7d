"""OpenTelemetry GenAI spans: OTLP/JSON exports, SDK span dumps and single flattened spans.

Accepted containers: OTLP/JSON envelopes (`resourceSpans[].scopeSpans[].spans[]`, attribute lists of
`{key, value{stringValue|intValue|...}}`, `intValue` and nano timestamps as strings; one envelope
per line in `.jsonl` collector files), JSON lists of SDK spans (JS `InMemorySpanExporter` dumps with
`spanContext`, flat `attributes` and hrtime `[sec, nanos]`; Python `ConsoleSpanExporter` output with
`context{trace_id, span_id}`, also as concatenated objects), and a bare attribute map of one span.

Four attribute conventions are read: current GenAI semconv (`gen_ai.operation.name`,
`gen_ai.input.messages`/`gen_ai.output.messages` as JSON parts, `gen_ai.tool.call.id` on
`execute_tool` spans, `gen_ai.agent.name`), OpenLLMetry flattening (`gen_ai.prompt.{i}.*`,
`gen_ai.completion.{i}.tool_calls.{j}.*`), OpenInference flattening (`llm.input_messages.{i}.message.*`,
`openinference.span.kind`, `tool.id`) and the Vercel AI SDK (`ai.prompt.messages`, `ai.response.*`,
`ai.toolCall.*`, `ai.usage.*`).

One trajectory per trace id, steps in span start order. Each chat span re-sends the conversation so
far: input messages already emitted by an earlier span are skipped, so every message appears once.
Tool spans fill in the result of the call with the same id (or become calls of their own). Spans
nested under two or more agent spans belong to the innermost agent (`agent_id`, `depth`), and a
sub-agent's steps point at the tool call that spawned it. Vercel `ai.generateText`-style wrapper
spans are used only when their `doGenerate`/`doStream` children are absent. Traces with no model,
tool or agent span (embeddings only) carry no agent steps and yield no trajectory. The outcome is
`unknown`: spans carry no grade.
"""

from ._adapter import OtelGenAiAdapter

__all__ = ["OtelGenAiAdapter"]
