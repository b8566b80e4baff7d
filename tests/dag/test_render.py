"""The text tree, and JSON / GraphML / DOT exports (escaped, redacted, parseable)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import xml.etree.ElementTree as ET

import networkx as nx
import pytest
from dagfix import Run
from test_omni import audio_run

from trajlab.dag import StepDag, _render, export, render_text
from trajlab.errors import ConfigError

SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _tricky() -> Run:
    r = Run(domain="audio")
    r.user("Use the key to fetch podcast_ep.mp3")
    r.bash(
        f'curl -H "Authorization: Bearer {SECRET}" https://example.com/podcast_ep.mp3 -o podcast_ep.mp3',
        '\x1b[2J\x1b[31mdownloaded\x07 "quoted" \\ back',
    )
    r.bash("whisper podcast_ep.mp3 --output_dir t", "Item 1 came in at 120 thousand")
    r.say('The first amount is 120 "thousand".')
    return r


def test_text_tree() -> None:
    d = audio_run().dag()
    text = render_text(d, audio_run().steps, max_output=40)
    lines = text.splitlines()
    assert lines[0].startswith("trajectory t_fixture: 6 steps") and "answer at step 5" in lines[0]
    assert "branches: audio#1; fed the answer: audio#1" in lines[1]
    assert "decisive-step candidates:" in text and "#1 step 4 answer_source" in text
    row = next(ln for ln in lines if ln.strip().startswith("4 ok"))
    assert "python" in row and "<< decisive #1 answer_source" in row and "audio#1" in row and "<- 3" in row
    assert "=> 515" in text
    assert next(ln for ln in lines if ln.strip().startswith("5 ok")).rstrip().endswith("ANSWER | <- answer:4")
    assert "=>" not in render_text(d, audio_run().steps, max_output=0)


def test_text_tree_is_safe() -> None:
    r = _tricky()
    text = render_text(r.dag(), r.steps)
    assert "\x1b" not in text and "\x07" not in text
    assert SECRET not in text and "[REDACTED" in text


def test_parallel_and_nested_rendering() -> None:
    r = Run()
    r.user("look around")
    r.call("Task", {"prompt": "read a.txt"}, "a says 4242")  # 1
    r._add("user", role="user", text="read a.txt", agent_id="sub", depth=1, parent_step_index=1)  # 2
    r._add(
        "tool_call",
        tool_name="Read",
        tool="read",
        arguments='{"file_path": "a.txt"}',
        output="4242",
        agent_id="sub",
        depth=1,
        parent_step_index=1,
        call_id="r1",
    )  # 3
    r.bash("ls", "a.txt")  # 4
    r.bash("ls -la", "a.txt", parallel=True)  # 5: same response
    text = render_text(r.dag(), r.steps)
    assert "┌ parallel calls" in text
    sub = next(ln for ln in text.splitlines() if ln.strip().startswith("3 ok"))
    assert sub.startswith("    ") and "[sub]" in sub


def test_json_export() -> None:
    d = audio_run().dag()
    doc = json.loads(export(d, "json"))
    assert doc["trajectory_id"] == "t_fixture"
    assert len(doc["nodes"]) == 6 and len(doc["edges"]) == len(d.edges)
    assert doc["metrics"]["answer_step"] == 5 and isinstance(doc["metrics"]["built_at"], str)
    assert doc["candidates"][0]["step_index"] == 4


def test_graphml_roundtrip() -> None:
    r = _tricky()
    d = r.dag()
    text = export(d, "graphml")
    assert SECRET not in text
    g = nx.read_graphml(io.BytesIO(text.encode()), force_multigraph=True)
    assert g.number_of_nodes() == len(d.nodes) and g.number_of_edges() == len(d.edges)
    types = sorted(data["type"] for _, _, data in g.edges(data=True))
    assert types == sorted(e["type"] for e in d.edges)
    assert g.nodes["2"]["modality"] == "audio"
    assert json.loads(g.nodes["2"]["produces"]) == [
        *(f"t/podcast_ep.{ext}" for ext in ("txt", "vtt", "srt", "tsv", "json")),
        "value:120",  # whisper's outputs, then what flowed on its answer edge
    ]


def test_dot_export_is_escaped() -> None:
    r = _tricky()
    text = export(r.dag(), "dot")
    assert text.startswith('digraph "t_fixture" {') and text.rstrip().endswith("}")
    assert SECRET not in text and "\x1b" not in text
    assert "n1 -> n2" in text and "<" not in text.replace("<-", "")
    for line in text.splitlines():
        if "label=" in line:
            body = line.split("label=", 1)[1]
            assert body.startswith('"')
            assert body.count('"') - body.count('\\"') >= 2  # quotes inside labels are escaped
    with pytest.raises(ConfigError, match="unknown export format"):
        export(r.dag(), "svg")


def test_text_tree_has_no_terminal_controls_anywhere() -> None:
    """Tool names come from the transcript too, and C1 controls (CSI U+009B, NEL U+0085) are escapes as
    much as ESC is; bidi overrides would reorder what the tree shows."""
    r = Run(tid="t_\x1b[31mred")
    r.user("go \x9b31m now \u202eevil")
    r.call("Evil\x1b[2JTool\x9b2J", {"x": 1}, "out \x9b2J \x85 \u202e done")
    r._add("user", role="user", text="sub", agent_id="ag\x9b1m", depth=1, parent_step_index=1)
    r.say("done")
    text = render_text(r.dag(), r.steps)
    bad = [c for c in text if (ord(c) < 32 and c != "\n") or 0x7F <= ord(c) < 0xA0 or c == "\u202e"]
    assert not bad, [hex(ord(c)) for c in bad]
    assert "[U+202E]" in text  # shown, not obeyed
    assert "evil [2jtool 2j" in text  # the tool, control characters removed


def test_exports_redact_what_nodes_produce_and_consume() -> None:
    """A node's produces/consumes lists hold the URLs, paths and values of its edges: secrets too."""
    r = Run()
    r.user("fetch it")
    r.bash(f"curl https://user:hunter2pass@example.com/data.json?api_key={SECRET} -o data.json", "saved")
    r.bash("cat creds.txt", f"token {SECRET}")
    r.say(f"The key is {SECRET}")
    d = r.dag()
    assert any(SECRET in x for n in d.nodes for x in (*n["produces"], *n["consumes"]))  # the input has them
    for fmt in ("json", "graphml"):
        text = export(d, fmt)
        assert SECRET not in text and "hunter2pass" not in text, fmt
        assert "[REDACTED:" in text


def test_a_secret_cut_by_a_label_is_not_shown_in_part() -> None:
    """Labels and output lines are cut to a width; the start of a key left before the cut
    (`sk-proj-A1b2C3…`) is too short for the redactor to recognize, so it must not be shown."""
    r = Run()
    r.user("go")
    pad = "echo padding padding padding padding padding padding padding pad"
    r.bash(f"{pad} {SECRET} && false", "failed", exit_code=1)  # an unrecovered error: a candidate
    r.bash("cat log.txt", "y" * 100 + " " + SECRET)
    r.say("done")
    d = r.dag()
    assert d.nodes[1]["label"].endswith("…") and SECRET[:12] in d.nodes[1]["label"]  # cut inside the key
    assert any(c["step_index"] == 1 for c in d.candidates)
    shown = [
        render_text(d, r.steps, max_output=110),
        export(d, "json"),
        export(d, "graphml"),
        export(d, "dot"),
    ]
    for text in shown:
        assert SECRET[:12] not in text
    assert f"{pad} …" in shown[0]  # the rest of the label is still shown


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` not installed (.ci/run installs it)")
def test_graphviz_draws_dot_labels_literally() -> None:
    """Backslash sequences are Graphviz escapes (\\N is the node name, \\l a line break): each label must
    come out of real `dot` as the transcript's text, character for character."""
    weird = 'type C:\\new\\temp\\ "x" \\N \\G \\E <b>{x}</b> end\\'
    r = Run()
    r.user("go")
    r.bash(weird, "out")
    r.bash('echo "a\\\\"', "done")
    r.say("answer \\n literal é 日本")
    p = subprocess.run(
        ["dot", "-Tsvg"], input=export(r.dag(), "dot").encode(), capture_output=True, timeout=60
    )
    assert p.returncode == 0 and not p.stderr, p.stderr
    texts = [t.text for t in ET.fromstring(p.stdout).iter("{http://www.w3.org/2000/svg}text")]
    assert weird in texts and 'echo "a\\\\"' in texts and "answer \\n literal é 日本" in texts
    assert texts.count("sequence") == 3


def _networkx_graphml(d: StepDag) -> str:
    """The export as networkx writes it (the writer trajlab used before its own)."""
    g = nx.MultiDiGraph()
    for k, v in _render._redacted_metrics(d).items():
        if v is not None:
            g.graph[k] = _render._scalar(v)
    for n in _render._redacted_nodes(d):
        g.add_node(
            n["node_id"],
            **{k: _render._scalar(v) for k, v in n.items() if v is not None and k != "trajectory_id"},
        )
    for e in _render._redacted_edges(d):
        g.add_edge(
            e["src"], e["dst"], key=e["type"], **{k: e[k] for k in ("type", "artifact", "rule") if e.get(k)}
        )
    return "\n".join(nx.generate_graphml(g)) + "\n"


@pytest.mark.parametrize("make", [_tricky, audio_run])
def test_graphml_reads_back_as_networkx_own_writer_does(make) -> None:  # type: ignore[no-untyped-def]
    r = make()
    r.bash("printf 'a\\rb'", "carriage\rreturn \x01 <tag> & \"q\" 'a'", exit_code=1)
    d = r.dag()
    ours = nx.read_graphml(io.BytesIO(export(d, "graphml").encode()), force_multigraph=True)
    theirs = nx.read_graphml(io.BytesIO(_networkx_graphml(d).encode()), force_multigraph=True)
    assert ours.graph == theirs.graph
    assert dict(ours.nodes(data=True)) == dict(theirs.nodes(data=True))
    assert sorted(ours.edges(keys=True, data=True)) == sorted(theirs.edges(keys=True, data=True))
    assert ours.number_of_edges() == len(d.edges)
