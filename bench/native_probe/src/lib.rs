//! Parse every line of a JSONL buffer the way a compiled ingest core would: into typed records that
//! keep the fields the Codex and Claude Code adapters read (borrowed where the JSON has no escapes)
//! and skip the rest without building it. No Python objects are made; the GIL is released.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
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
    content: Option<IgnoredAny>,
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
    input: Option<IgnoredAny>,
    content: Option<IgnoredAny>,
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

#[pymodule]
fn trajlab_native_probe(_py: Python, m: &PyModule) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parse_typed, m)?)?;
    Ok(())
}
