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

impl Steps {
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        kind: &str,
        text: Option<&str>,
        call_id: Option<&str>,
        tool_name: Option<&str>,
        arguments: Option<&str>,
        output: Option<&str>,
        timestamp: Option<&str>,
        exit_code: Option<i64>,
    ) {
        self.kind.push(Some(kind));
        self.text.push(text);
        self.call_id.push(call_id);
        self.tool_name.push(tool_name);
        self.arguments.push(arguments);
        self.output.push(output);
        self.timestamp.push(timestamp);
        self.exit_code.push(exit_code);
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
    let ts = rec.timestamp.as_deref();
    if let Some(p) = &rec.payload {
        if rec.typ.as_deref() != Some("response_item") {
            return;
        }
        match p.typ.as_deref() {
            Some("message") => {
                let kind = if p.role.as_deref() == Some("assistant") {
                    "assistant"
                } else {
                    "user"
                };
                out.add(
                    kind,
                    joined(&p.content).as_deref(),
                    None,
                    None,
                    None,
                    None,
                    ts,
                    None,
                );
            }
            Some("reasoning") => out.add("reasoning", None, None, None, None, None, ts, None),
            Some("function_call") | Some("custom_tool_call") | Some("local_shell_call") => {
                let args = p.arguments.as_deref().or(p.input.as_deref());
                out.add(
                    "tool_call",
                    None,
                    p.call_id.as_deref(),
                    p.name.as_deref(),
                    args,
                    None,
                    ts,
                    None,
                )
            }
            Some("function_call_output") | Some("custom_tool_call_output") => out.add(
                "tool_result",
                None,
                p.call_id.as_deref(),
                None,
                None,
                p.output.as_deref(),
                ts,
                p.exit_code,
            ),
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
    match &m.content {
        Some(Content::Text(t)) => out.add(kind, Some(t), None, None, None, None, ts, None),
        Some(Content::Blocks(bs)) => {
            for b in bs {
                match b.typ.as_deref() {
                    Some("text") => {
                        out.add(kind, b.text.as_deref(), None, None, None, None, ts, None)
                    }
                    Some("thinking") => out.add(
                        "reasoning",
                        b.thinking.as_deref(),
                        None,
                        None,
                        None,
                        None,
                        ts,
                        None,
                    ),
                    Some("tool_use") => out.add(
                        "tool_call",
                        None,
                        b.id.as_deref(),
                        b.name.as_deref(),
                        None,
                        None,
                        ts,
                        None,
                    ),
                    Some("tool_result") => {
                        let text = joined(&b.content);
                        out.add(
                            "tool_result",
                            None,
                            b.tool_use_id.as_deref(),
                            None,
                            None,
                            text.as_deref(),
                            ts,
                            None,
                        )
                    }
                    _ => {}
                }
            }
        }
        None => {}
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
