//! Parse every line of a JSONL buffer the way a compiled ingest core would: into typed records that
//! keep the fields the Codex and Claude Code adapters read (borrowed where the JSON has no escapes)
//! and skip the rest without building it. No Python objects are made; the GIL is released.
//! `step_columns` goes one stage further: one row per step in Arrow's column layout, handed to pyarrow
//! as buffers (the mechanics of a JSON-to-Arrow core; the adapters' rules are not ported).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde::de::IgnoredAny;
use serde::Deserialize;
use std::borrow::Cow;

#[derive(Deserialize)]
#[allow(dead_code)]
struct Line<'a> {
    #[serde(borrow, rename = "type")]
    typ: Option<Cow<'a, str>>,
    #[serde(borrow)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow)]
    payload: Option<Payload<'a>>,
    #[serde(borrow)]
    message: Option<Message<'a>>,
    #[serde(borrow)]
    uuid: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "parentUuid")]
    parent_uuid: Option<Cow<'a, str>>,
    data: Option<IgnoredAny>,
    #[serde(rename = "toolUseResult")]
    tool_use_result: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Payload<'a> {
    #[serde(borrow, rename = "type")]
    typ: Option<Cow<'a, str>>,
    #[serde(borrow)]
    call_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    arguments: Option<Cow<'a, str>>,
    #[serde(borrow)]
    output: Option<Cow<'a, str>>,
    exit_code: Option<i64>,
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
    aggregated_output: Option<IgnoredAny>,
    info: Option<IgnoredAny>,
    #[serde(borrow)]
    content: Option<Content<'a>>,
    #[serde(borrow)]
    input: Option<Cow<'a, str>>,
    #[serde(borrow)]
    role: Option<Cow<'a, str>>,
    summary: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Message<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    content: Option<Content<'a>>,
    usage: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(untagged)]
#[allow(dead_code)]
enum Content<'a> {
    #[serde(borrow)]
    Text(Cow<'a, str>),
    #[serde(borrow)]
    Blocks(Vec<Block<'a>>),
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Block<'a> {
    #[serde(borrow, rename = "type")]
    typ: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow)]
    tool_use_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    input: Option<IgnoredAny>,
    #[serde(borrow)]
    content: Option<Content<'a>>,
    is_error: Option<bool>,
}

/// (records, bytes of the kept output text) of a JSONL buffer; ValueError naming the line on bad JSON.
#[pyfunction]
fn parse_typed(py: Python, buf: &[u8]) -> PyResult<(usize, usize)> {
    py.allow_threads(|| {
        let (mut records, mut kept) = (0usize, 0usize);
        for (i, line) in buf.split(|c| *c == b'\n').enumerate() {
            if line.iter().all(|c| c.is_ascii_whitespace()) {
                continue;
            }
            let rec: Line = serde_json::from_slice(line)
                .map_err(|e| PyValueError::new_err(format!("line {}: {}", i + 1, e)))?;
            records += 1;
            if let Some(out) = rec.payload.as_ref().and_then(|p| p.output.as_ref()) {
                kept += out.len();
            }
        }
        Ok((records, kept))
    })
}

/// A nullable UTF-8 column in Arrow's layout: validity bitmap, i32 offsets, value bytes.
#[derive(Default)]
struct StrCol {
    valid: Vec<u8>,
    offsets: Vec<i32>,
    data: Vec<u8>,
    nulls: usize,
    len: usize,
}

impl StrCol {
    fn push(&mut self, v: Option<&str>) {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        if self.len % 8 == 0 {
            self.valid.push(0);
        }
        match v {
            Some(s) => {
                self.data.extend_from_slice(s.as_bytes());
                self.valid[self.len / 8] |= 1 << (self.len % 8);
            }
            None => self.nulls += 1,
        }
        self.offsets.push(self.data.len() as i32);
        self.len += 1;
    }
}

/// A nullable int64 column in Arrow's layout.
#[derive(Default)]
struct IntCol {
    valid: Vec<u8>,
    values: Vec<i64>,
    nulls: usize,
}

impl IntCol {
    fn push(&mut self, v: Option<i64>) {
        let n = self.values.len();
        if n % 8 == 0 {
            self.valid.push(0);
        }
        match v {
            Some(x) => {
                self.values.push(x);
                self.valid[n / 8] |= 1 << (n % 8);
            }
            None => {
                self.values.push(0);
                self.nulls += 1;
            }
        }
    }
}

#[derive(Default)]
struct Steps {
    kind: StrCol,
    text: StrCol,
    call_id: StrCol,
    tool_name: StrCol,
    arguments: StrCol,
    output: StrCol,
    timestamp: StrCol,
    exit_code: IntCol,
}

/// One step row; the fields a record does not have stay `None`.
#[derive(Default)]
struct Step<'s> {
    kind: &'s str,
    text: Option<&'s str>,
    call_id: Option<&'s str>,
    tool_name: Option<&'s str>,
    arguments: Option<&'s str>,
    output: Option<&'s str>,
    timestamp: Option<&'s str>,
    exit_code: Option<i64>,
}

impl Steps {
    fn add(&mut self, s: Step) {
        self.kind.push(Some(s.kind));
        self.text.push(s.text);
        self.call_id.push(s.call_id);
        self.tool_name.push(s.tool_name);
        self.arguments.push(s.arguments);
        self.output.push(s.output);
        self.timestamp.push(s.timestamp);
        self.exit_code.push(s.exit_code);
    }
}

fn joined(content: &Option<Content>) -> Option<String> {
    match content {
        Some(Content::Text(t)) => Some(t.to_string()),
        Some(Content::Blocks(bs)) => {
            let parts: Vec<&str> = bs.iter().filter_map(|b| b.text.as_deref()).collect();
            if parts.is_empty() {
                None
            } else {
                Some(parts.join("\n"))
            }
        }
        None => None,
    }
}

/// Step columns of one record (a Codex rollout line or a Claude Code transcript line): the mechanics a
/// compiled ingest core needs (typed parse, one row per step, Arrow buffers), not the adapters' rules.
fn record_steps(rec: &Line, out: &mut Steps) {
    let timestamp = rec.timestamp.as_deref();
    if let Some(p) = &rec.payload {
        if rec.typ.as_deref() != Some("response_item") {
            return;
        }
        match p.typ.as_deref() {
            Some("message") => {
                let assistant = p.role.as_deref() == Some("assistant");
                let text = joined(&p.content);
                out.add(Step {
                    kind: if assistant { "assistant" } else { "user" },
                    text: text.as_deref(),
                    timestamp,
                    ..Default::default()
                });
            }
            Some("reasoning") => out.add(Step {
                kind: "reasoning",
                timestamp,
                ..Default::default()
            }),
            Some("function_call") | Some("custom_tool_call") | Some("local_shell_call") => {
                out.add(Step {
                    kind: "tool_call",
                    call_id: p.call_id.as_deref(),
                    tool_name: p.name.as_deref(),
                    arguments: p.arguments.as_deref().or(p.input.as_deref()),
                    timestamp,
                    ..Default::default()
                })
            }
            Some("function_call_output") | Some("custom_tool_call_output") => out.add(Step {
                kind: "tool_result",
                call_id: p.call_id.as_deref(),
                output: p.output.as_deref(),
                timestamp,
                exit_code: p.exit_code,
                ..Default::default()
            }),
            _ => {}
        }
        return;
    }
    let Some(m) = &rec.message else { return };
    let kind = if rec.typ.as_deref() == Some("assistant") {
        "assistant"
    } else {
        "user"
    };
    let blocks = match &m.content {
        Some(Content::Text(t)) => {
            out.add(Step {
                kind,
                text: Some(t),
                timestamp,
                ..Default::default()
            });
            return;
        }
        Some(Content::Blocks(bs)) => bs,
        None => return,
    };
    for b in blocks {
        let result = joined(&b.content);
        let step = match b.typ.as_deref() {
            Some("text") => Step {
                kind,
                text: b.text.as_deref(),
                ..Default::default()
            },
            Some("thinking") => Step {
                kind: "reasoning",
                text: b.thinking.as_deref(),
                ..Default::default()
            },
            Some("tool_use") => Step {
                kind: "tool_call",
                call_id: b.id.as_deref(),
                tool_name: b.name.as_deref(),
                ..Default::default()
            },
            Some("tool_result") => Step {
                kind: "tool_result",
                call_id: b.tool_use_id.as_deref(),
                output: result.as_deref(),
                ..Default::default()
            },
            _ => continue,
        };
        out.add(Step { timestamp, ..step });
    }
}

type StrBuffers = (String, usize, usize, Py<PyBytes>, Py<PyBytes>, Py<PyBytes>);

/// The step columns of a JSONL buffer as Arrow buffers: [(name, length, null count, validity, offsets
/// or values, data)], the data empty for the int64 column. Parsing and column building release the GIL.
#[pyfunction]
fn step_columns(py: Python, buf: &[u8]) -> PyResult<Vec<StrBuffers>> {
    let steps = py.allow_threads(|| -> Result<Steps, String> {
        let mut steps = Steps::default();
        for (i, line) in buf.split(|c| *c == b'\n').enumerate() {
            if line.iter().all(|c| c.is_ascii_whitespace()) {
                continue;
            }
            let rec: Line =
                serde_json::from_slice(line).map_err(|e| format!("line {}: {}", i + 1, e))?;
            record_steps(&rec, &mut steps);
        }
        Ok(steps)
    });
    let steps = steps.map_err(PyValueError::new_err)?;
    let bytes = |b: &[u8]| -> Py<PyBytes> { PyBytes::new(py, b).into() };
    let mut out: Vec<StrBuffers> = Vec::new();
    for (name, c) in [
        ("kind", &steps.kind),
        ("text", &steps.text),
        ("call_id", &steps.call_id),
        ("tool_name", &steps.tool_name),
        ("arguments", &steps.arguments),
        ("output", &steps.output),
        ("timestamp", &steps.timestamp),
    ] {
        let offsets: &[u8] = unsafe {
            std::slice::from_raw_parts(c.offsets.as_ptr() as *const u8, c.offsets.len() * 4)
        };
        out.push((
            name.to_string(),
            c.len,
            c.nulls,
            bytes(&c.valid),
            bytes(offsets),
            bytes(&c.data),
        ));
    }
    let e = &steps.exit_code;
    let values: &[u8] =
        unsafe { std::slice::from_raw_parts(e.values.as_ptr() as *const u8, e.values.len() * 8) };
    out.push((
        "exit_code".to_string(),
        e.values.len(),
        e.nulls,
        bytes(&e.valid),
        bytes(values),
        bytes(&[]),
    ));
    Ok(out)
}

#[pymodule]
fn trajlab_native_probe(_py: Python, m: &PyModule) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parse_typed, m)?)?;
    m.add_function(wrap_pyfunction!(step_columns, m)?)?;
    Ok(())
}
