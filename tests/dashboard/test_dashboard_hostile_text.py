"""Hostile and extreme trajectory text in a real browser (Debian Chromium via Playwright, server on 127.0.0.1).

A lab of our own: one run whose task, tool name, normalized tool, commands, outputs, reasoning, final and
expected answer, model, judge rationale, evidence quote and human note carry `<script>`, `<img onerror>`, a
`javascript:` Markdown link, ANSI escapes, a right-to-left override, NUL bytes, emoji with combining marks,
secrets and a 2 MB single-line output; and one 5,000-step run whose commands carry `<img onerror>`.
Every page that shows trajectory text (runs, trajectory with its DAG, inspector, timeline and labels,
review queue) must show it as literal text: no script runs (`window.__pwned` stays undefined, no dialog),
no element is injected, no uncaught error, secrets are redacted, and the pages render in a sane time.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from dash_labs import T0, long_run, traj_row


def browser_test(f):
    """The browser tests (the text helpers' tests below them need no browser)."""
    return pytest.mark.browser(pytest.mark.slow(f))


CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
WAIT = 60_000  # ms; a loaded 2-core machine renders slowly
SANE_S = 30.0  # a page that takes longer than this to show its content is broken, not slow

SCRIPT = "<script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=1">'
MDLINK = "[click](javascript:window.__pwned=1)"
ANSI = (
    "\x1b[31mRED\x1b[0m plain \x1b]8;;javascript:window.__pwned=1\x07osc-link\x1b]8;;\x07 \x1b[1;4mbold\x1b[m"
)
RTL = "report_\u202efdp.exe"  # shows as "report_exe.pdf" when the override is obeyed
NUL = "before\x00after\x00\x00end"
EMOJI = "👩‍👩‍👧‍👦 🏳️‍🌈 café e\u0301 Z\u0335\u0321a\u0337\u0328l\u0336g\u0338o 𝔘𝔫𝔦"
ZALGO = "Z" + "\u0358\u0350\u0351\u0352" * 60 + "algo"  # one grapheme of 241 code points: cannot wrap
OPENAI_KEY = "sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
BIG_CHARS = 2_000_000
HOSTILE_TID = "t_hostile0000001"
BIG_TID = "t_big5000steps01"
BIG_STEPS = 5000
HOSTILE_TOOL = "<b>bold-tool</b>"
BIG_TOOL = "ffmpeg\u202e<i>gpj.exe</i>"  # a tool name with an override, in folded-run labels
# plotly renders <b> and <a href>; the override would reverse the label
BIG_MODEL = '<b>bold-model</b> <a href="https://example.invalid/">ext</a> \u202eright'


def _hostile_run() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    tid = HOSTILE_TID
    big = "BIG-START " + "x" * (BIG_CHARS - 18) + " BIG-END"
    rows: list[dict[str, Any]] = []

    def add(kind: str, **f: Any) -> None:
        i = len(rows)
        rows.append(
            {
                "trajectory_id": tid,
                "step_index": i,
                "step_id": f"{tid}:{i}",
                "kind": kind,
                "timestamp": T0 + timedelta(seconds=3 * i),
                **f,
            }
        )

    call = {"kind": "tool_call", "tool_name": "Bash", "tool": "bash", "modality": "compute", "exit_code": 0}
    add("user", text=f"Task {SCRIPT} {MDLINK}")  # 0
    add(  # 1: raw HTML in the runner's tool name and the normalized tool
        **{**call, "tool_name": IMG, "tool": HOSTILE_TOOL},
        command=f"echo '{SCRIPT}' {IMG}",
        output=f"{SCRIPT}\n{IMG}\n{MDLINK}",
        arguments=f'{{"html": "{SCRIPT}", "link": "{MDLINK}"}}',
    )
    add(**call, command="printf colors", output=ANSI, stderr=f"warn {ANSI}")  # 2
    add(**call, command=f"mv {RTL} /tmp/", output=f"{RTL}\n{NUL}")  # 3
    add(**call, command="echo emoji", output=f"{EMOJI}\n{ZALGO}")  # 4
    add(  # 5: secrets in the command and the output
        **call,
        command=f"export OPENAI_API_KEY={OPENAI_KEY}; aws s3 ls --profile p",
        output=f"OPENAI_API_KEY={OPENAI_KEY}\nkey id {AWS_KEY}\n",
    )
    add(**call, command="cat big.txt", output=big)  # 6: a 2 MB single line
    add("reasoning", text=f"{MDLINK} {IMG}")  # 7
    add("assistant", text=f"{IMG} {MDLINK} {SCRIPT}")  # 8
    traj = traj_row(
        tid,
        0,
        len(rows),
        runner="codex",
        model=f"model {IMG}",
        outcome="failure",
        task=rows[0]["text"],
        final_answer=rows[-1]["text"],
        expected_answer=f"{SCRIPT} {EMOJI} {ZALGO}",
        n_tool_calls=6,
        started_at=T0,
    )
    return traj, rows


def _big_run() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    traj, rows = long_run(BIG_TID, BIG_STEPS, n_subagents=3, seed=7)
    for r in rows[1::97]:
        if r["kind"] == "tool_call" and r.get("command"):
            r["command"] = f"echo '{IMG}' {SCRIPT} {r['step_index']}"
    for r in rows:  # the folded runs of ffmpeg calls are labelled with this tool name
        if r.get("tool") == "ffmpeg":
            r["tool"] = BIG_TOOL
    traj.update(runner="claude_code", model=BIG_MODEL, started_at=T0 + timedelta(hours=1))
    return traj, rows


def build_hostile_lab(root: Path) -> Path:
    """The hostile run, the 5,000-step run and two plain runs, with DAGs, a judge label and a human note."""
    from trajlab.dag import build_lab
    from trajlab.store import Lab

    lab_path = root / "lab"
    lab = Lab.create(lab_path)
    hostile, hrows = _hostile_run()
    bigt, brows = _big_run()
    plain, prows = [], []
    for i in (1, 2):
        tid = f"t_plain{i:09d}"
        plain.append(traj_row(tid, i + 2, 2, started_at=T0 + timedelta(hours=2 + i)))
        prows += [
            {"trajectory_id": tid, "step_index": 0, "step_id": f"{tid}:0", "kind": "user", "text": "hi"},
            {"trajectory_id": tid, "step_index": 1, "step_id": f"{tid}:1", "kind": "assistant", "text": "42"},
        ]
    with lab.write("hostile-fixture") as txn:
        txn.append("trajectories", [hostile, bigt, *plain])
        txn.append("steps", hrows + brows + prows)
    build_lab(lab_path, progress=False, workers=1)
    with lab.write("hostile-labels") as txn:
        txn.append(
            "judge_labels",
            [
                {
                    "label_id": "jl_hostile",
                    "trajectory_id": HOSTILE_TID,
                    "judge": "llm",
                    "model": f"judge {SCRIPT}",
                    "taxonomy_id": "omni-failure",
                    "taxonomy_version": "1.0.0",
                    "status": "labeled",
                    "category": "tool_infrastructure",
                    "decisive_step_index": 1,
                    "evidence_steps": [1, 5],
                    "evidence_quotes": [IMG, f"OPENAI_API_KEY={OPENAI_KEY}"],
                    "evidence_verified": [True, True],
                    "rationale": f"Rationale {SCRIPT} {IMG} {MDLINK} key {AWS_KEY}",
                    "confidence": 0.3,
                    "created_at": T0,
                }
            ],
        )
        txn.append(
            "human_labels",
            [
                {
                    "record_id": "hr_hostile",
                    "trajectory_id": HOSTILE_TID,
                    "annotator": HOSTILE_TOOL,
                    "dataset": "other",
                    "taxonomy_id": "omni-failure",
                    "taxonomy_version": "1.0.0",
                    "category": "tool_infrastructure",
                    "decisive_step_index": 1,
                    "note": f"note {IMG} {MDLINK}",
                    "created_at": T0,
                    "source_file": "annotations/other/x.jsonl",
                    "source_line": 1,
                }
            ],
        )
    return lab_path


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    return build_hostile_lab(tmp_path_factory.mktemp("dash-hostile"))


@pytest.fixture(scope="module")
def server(lab):
    from trajlab.dashboard import DashboardServer, create_app

    app = create_app(lab, annotations=lab.parent / "annotations", dataset="default")
    srv = DashboardServer(app, "127.0.0.1", 0).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


# What an injection would leave behind: the flag, an element from the text, a javascript: link.
INJECTED = """() => ({
    pwned: typeof window.__pwned,
    imgs: document.querySelectorAll('img[src="x"], img[onerror], [onerror]').length,
    bold: [...document.querySelectorAll('b')].filter(b => b.textContent === 'bold-tool').length,
    scripts: [...document.scripts].filter(s => s.textContent.includes('__pwned')).length,
    links: document.querySelectorAll('a[href^="javascript:" i]').length,
})"""


class Hostile:
    """A page that records dialogs, uncaught errors and console errors, and checks nothing got injected."""

    def __init__(self, browser, base: str):
        self.page = browser.new_page(viewport={"width": 1500, "height": 1000})
        self.page.set_default_timeout(WAIT)
        self.base = base.rstrip("/")
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.console: list[str] = []
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", lambda m: m.type == "error" and self.console.append(m.text))

    def goto(self, path: str) -> float:
        """Open a page; seconds until its layout is in."""
        t = time.monotonic()
        self.page.goto(self.base + path)
        self.page.wait_for_selector("#page > *")
        return time.monotonic() - t

    def wait_text(self, selector: str, text: str) -> None:
        self.page.wait_for_function(
            "([s, t]) => { const e = document.querySelector(s); return e && e.innerText.includes(t); }",
            arg=[selector, text],
        )

    def wait_dag(self, total: int) -> None:
        self.page.wait_for_function(
            "(want) => { const t = (document.querySelector('#dag-info') || {}).innerText || '';"
            " const m = t.match(/drawn ([\\d,]+) of ([\\d,]+) nodes/); if (!m) return false;"
            " return m[1] === m[2] && +m[2].replace(/,/g, '') === want"
            " && window.trajlabDag && window.trajlabDag.count() === want; }",
            arg=total,
        )

    def text(self, selector: str) -> str:
        return self.page.inner_text(selector)

    def click_node(self, node_id: str) -> None:
        assert self.page.evaluate("(id) => window.trajlabDag.center(id)", node_id), node_id
        self.page.wait_for_timeout(100)
        x, y = self.page.evaluate("(id) => window.trajlabDag.clientPoint(id)", node_id)
        self.page.mouse.click(x, y)

    def inspect(self, step: int) -> str:
        self.click_node(f"n{step}")
        self.wait_text("#inspector-title", f"Step {step} ")
        return self.text("#inspector")

    def assert_clean(self) -> None:
        self.page.wait_for_timeout(300)  # give an injected handler (img onerror) time to fire
        got = self.page.evaluate(INJECTED)
        assert got == {"pwned": "undefined", "imgs": 0, "bold": 0, "scripts": 0, "links": 0}, got
        assert self.dialogs == [], f"a dialog opened (injected script ran): {self.dialogs}"
        assert self.errors == [], self.errors
        assert self.console == [], self.console


@pytest.fixture()
def page(browser, server):
    w = Hostile(browser, server.url)
    yield w
    w.assert_clean()
    w.page.close()


def _rendered(page: Hostile, timeout_s: float, t0: float) -> None:
    took = time.monotonic() - t0
    assert took < timeout_s, f"took {took:.1f} s"


@browser_test
def test_runs_page_shows_hostile_text_as_text(page):
    t0 = time.monotonic()
    page.goto("/")
    page.wait_text("#runs-summary", "RUNS")
    page.page.wait_for_selector(f"#runs-table td[data-dash-column=trajectory_id] >> text={HOSTILE_TID}")
    _rendered(page, SANE_S, t0)
    assert page.text("#runs-summary .card-value >> nth=0") == "4"
    row = page.page.locator("#runs-table tr", has_text=HOSTILE_TID)
    assert row.locator("td[data-dash-column=task]").inner_text() == f"Task {SCRIPT} {MDLINK}"
    assert row.locator("td[data-dash-column=model]").inner_text() == f"model {IMG}"
    # the filters list the hostile model and tool as options, as text
    page.page.locator("#runs-filter-box-tool button.dash-dropdown").click()
    options = page.page.locator("[role=option]").all_inner_texts()
    assert f"{HOSTILE_TOOL} (1)" in options, options
    page.page.keyboard.press("Escape")
    # the text search finds the run by its hostile task
    page.page.fill("#runs-search", "window.__pwned")
    page.page.press("#runs-search", "Enter")
    page.page.wait_for_function("() => document.querySelector('#runs-summary .card-value').innerText === '1'")
    assert page.page.locator("#runs-table td[data-dash-column=trajectory_id]").all_inner_texts() == [
        HOSTILE_TID
    ]
    # searches are literal parameters: quotes, wildcards and SQL find nothing and break nothing
    for q in ("'", "%", "\\", "_", "'); DROP TABLE trajectories; --"):
        page.page.fill("#runs-search", q)
        page.page.press("#runs-search", "Enter")
        page.page.wait_for_function(
            "() => document.querySelector('#runs-summary .card-value').innerText === '0'"
        )
        assert page.text("#runs-error") == "", q
    # a hostile trajectory id in the URL is not routed (ids are [A-Za-z0-9_.:-]) and is named as text
    page.goto("/trajectory/" + quote(IMG, safe=""))
    page.wait_text("#page", "No page at")
    assert f"No page at /trajectory/{quote(IMG, safe='')}." in page.text("#page")


@browser_test
def test_trajectory_page_header_labels_and_dag(page):
    t0 = time.monotonic()
    page.goto(f"/trajectory/{HOSTILE_TID}")
    page.wait_dag(9)
    _rendered(page, SANE_S, t0)
    header = page.text(".traj-header")
    assert f"Task {SCRIPT} {MDLINK}" in header
    assert f"{IMG} {MDLINK} {SCRIPT}" in header  # final answer
    assert f"{SCRIPT} {EMOJI} {ZALGO}" in header  # expected answer, emoji and combining marks intact
    # an unbreakable 241-code-point grapheme scrolls inside its box: the page gets no horizontal overflow
    assert page.page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    assert f"model: model {IMG}" in header
    # the labels panel: judge model, rationale, evidence quotes (one redacted), human note and annotator
    page.wait_text("#labels-body", "Rationale")
    labels = page.text("#labels-body")
    assert f"judge {SCRIPT}" in labels
    assert f"Rationale {SCRIPT} {IMG} {MDLINK} key [REDACTED:aws_access_key_id]" in labels
    assert IMG in labels and "OPENAI_API_KEY=[REDACTED:" in labels
    assert f"note {IMG} {MDLINK}" in labels and HOSTILE_TOOL in labels
    # DAG node labels are plain strings drawn on the canvas (and a title attribute on hover)
    label = page.page.evaluate("() => window.trajlabDag.node('n1').label")
    assert label == f"1 · echo '{SCRIPT}"[:43] + "…"  # cut to 40 characters
    assert page.page.evaluate("() => window.trajlabDag.node('n7').label").startswith(f"7 · {MDLINK} <i")
    secret_label = page.page.evaluate("() => window.trajlabDag.node('n5').label")
    assert secret_label.startswith("5 · export OPENAI_API_KEY=[REDACTED:"), secret_label
    assert page.page.evaluate("() => window.trajlabDag.center('n1')")
    x, y = page.page.evaluate("() => window.trajlabDag.clientPoint('n1')")
    page.page.mouse.move(x, y)
    page.page.wait_for_function("() => document.querySelector('#dag-canvas').title.startsWith('1 · echo')")
    assert page.page.get_attribute("#dag-canvas", "title") == label
    html = page.page.content()
    assert OPENAI_KEY not in html and AWS_KEY not in html and OPENAI_KEY[:12] not in html


@browser_test
def test_step_inspector_and_timeline(page):
    page.goto(f"/trajectory/{HOSTILE_TID}")
    page.wait_dag(9)
    text = page.inspect(1)
    assert f"Step 1 · tool_call · {HOSTILE_TOOL}" in page.text("#inspector-title")
    assert f"runner tool\t{IMG}" in text
    assert page.text("#inspector-output") == f"{SCRIPT}\n{IMG}\n{MDLINK}"
    assert f'"html": "{SCRIPT}"' in text and f'"link": "{MDLINK}"' in text  # arguments, pretty JSON
    assert f"echo '{SCRIPT}' {IMG}" in text  # the command

    page.inspect(2)  # ANSI escapes removed, the text between them kept
    assert page.text("#inspector-output") == "RED plain osc-link bold"
    assert "warn RED plain osc-link bold" in page.text("#inspector")

    page.inspect(3)  # NUL bytes dropped; the right-to-left override shown, not obeyed
    out = page.text("#inspector-output")
    assert out.split("\n")[1] == "beforeafterend"
    assert "\u202e" not in out and "report_[U+202E]fdp.exe" in out
    assert "mv report_[U+202E]fdp.exe /tmp/" in page.text("#inspector")

    page.inspect(4)
    assert page.text("#inspector-output") == f"{EMOJI}\n{ZALGO}"
    assert page.page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")

    text = page.inspect(5)  # secrets redacted in the command and the output
    assert "export OPENAI_API_KEY=[REDACTED:" in text
    assert "key id [REDACTED:aws_access_key_id]" in page.text("#inspector-output")
    assert OPENAI_KEY[:12] not in page.page.content() and AWS_KEY not in page.page.content()

    t0 = time.monotonic()
    page.inspect(6)  # 2 MB on one line: cut, and says how much is left out
    _rendered(page, SANE_S, t0)
    out = page.text("#inspector-output")
    assert out.startswith("BIG-START xxx") and "BIG-END" not in out
    assert out.endswith(f"… [{BIG_CHARS - 60_000:,} more characters not shown]")
    assert len(out) < 60_100

    page.inspect(8)
    assert f"{IMG} {MDLINK} {SCRIPT}" in page.text("#inspector")

    page.page.click("text=Timeline")
    page.page.wait_for_selector("#timeline td[data-dash-column=what]")
    what = page.page.locator("#timeline td[data-dash-column=what]").all_inner_texts()
    tools = page.page.locator("#timeline td[data-dash-column=tool]").all_inner_texts()
    assert what[0] == f"Task {SCRIPT} {MDLINK}"
    assert what[1] == f"echo '{SCRIPT}' {IMG}"
    assert what[3] == "mv report_[U+202E]fdp.exe /tmp/"
    assert what[5].startswith("export OPENAI_API_KEY=[REDACTED:")
    assert tools[1] == HOSTILE_TOOL


@browser_test
def test_5000_step_run_draws_and_keeps_text_inert(page):
    t0 = time.monotonic()
    page.goto(f"/trajectory/{BIG_TID}?fold=0&agents=none")
    page.wait_dag(BIG_STEPS)
    _rendered(page, SANE_S, t0)
    hostile = [
        n for n in page.page.evaluate("() => window.trajlabDag.nodes()") if "onerror" in n.get("label", "")
    ]
    assert len(hostile) >= 40, len(hostile)
    n = hostile[len(hostile) // 2]
    assert n["label"].startswith(f"{n['step']} · echo '<img src=x onerror=")
    page.click_node(n["id"])
    page.wait_text("#inspector-title", f"Step {n['step']} ")
    assert f"echo '{IMG}' {SCRIPT} {n['step']}" in page.text("#inspector")
    # the timeline of 5,000 rows, filtered to the hostile commands: literal text in every cell
    want = sum("onerror" in (r.get("command") or "") for r in _big_run()[1])
    page.page.click("text=Timeline")
    page.page.wait_for_selector("#timeline td[data-dash-column=what]")
    page.page.fill("#timeline th.dash-filter[data-dash-column=what] input", "onerror")
    page.page.keyboard.press("Enter")
    page.page.wait_for_function(
        "(n) => document.querySelectorAll('#timeline td[data-dash-column=what]').length === n",
        arg=min(want, 50),
    )
    cells = page.page.locator("#timeline td[data-dash-column=what]").all_inner_texts()
    assert all(c.startswith(f"echo '{IMG}' {SCRIPT} ") for c in cells), cells[:3]
    # the default (folded) view of the same run
    page.goto(f"/trajectory/{BIG_TID}")
    page.page.wait_for_function(
        "() => /drawn ([\\d,]+) of \\1 nodes/.test(document.querySelector('#dag-info').innerText)"
    )
    assert page.page.evaluate("() => window.trajlabDag.count()") < BIG_STEPS // 3
    groups = [n["label"] for n in page.page.evaluate("() => window.trajlabDag.nodes('group')")]
    assert len(groups) >= 100 and all("\u202e" not in g for g in groups)
    assert sum(" ffmpeg[U+202E]<i>gpj.exe</i> steps " in g for g in groups) >= 100, groups[:5]


@browser_test
def test_review_queue_and_review_note(page, lab):
    import json

    page.goto("/review")
    # a reviewer name that cannot be a file name is refused, as text
    for name in (IMG, "../../evil"):
        page.page.fill("#annotator", name)
        page.page.press("#annotator", "Enter")
        page.wait_text(".panel-queue", f"annotator name {name!r} is not allowed")
    page.page.fill("#annotator", "dora")
    page.page.press("#annotator", "Enter")
    page.page.wait_for_selector(".panel-queue .dash-spreadsheet")
    row = page.page.locator(".panel-queue tr", has_text=HOSTILE_TID)
    assert row.locator("td[data-dash-column=task]").inner_text() == f"Task {SCRIPT} {MDLINK}"
    row.locator("td[data-dash-column=trajectory_id]").click()
    page.wait_text("#traj-title-id", HOSTILE_TID)
    page.wait_dag(9)
    page.wait_text("#review-as", "reviewing as dora")
    # on the trajectory page too: the labels panel stays, the name is refused and nothing is written
    page.page.fill("#annotator", "../../evil")
    page.page.press("#annotator", "Enter")
    page.wait_text("#review-as", "annotator name '../../evil' is not allowed")
    assert "Rationale" in page.text("#labels-body")
    page.page.click("#review-accept")
    page.wait_text("#review-msg", "annotator name '../../evil' is not allowed")
    assert not (lab.parent / "evil.jsonl").exists() and not (lab.parent.parent / "evil.jsonl").exists()
    page.page.fill("#annotator", "dora")
    page.page.press("#annotator", "Enter")
    page.wait_text("#review-as", "reviewing as dora")
    note = f"{SCRIPT} {IMG} {MDLINK} {EMOJI}"
    page.page.fill("#review-note", note)
    page.page.click("#review-accept")
    page.wait_text("#review-msg", "accepted as tool_infrastructure")
    page.wait_text("#human-labels", "dora")
    assert f"{SCRIPT} {IMG} {MDLINK}" in page.text("#human-labels")
    (rec,) = [
        json.loads(x)
        for x in (lab.parent / "annotations" / "default" / "dora.jsonl").read_text().splitlines()
    ]
    assert rec["note"] == note and rec["trajectory_id"] == HOSTILE_TID


@browser_test
def test_sql_chart_labels_are_inert(page):
    """The Models page's bar chart (a YAML `sql` panel): model names are axis labels, shown as text."""
    page.goto("/models")
    page.page.wait_for_selector(".js-plotly-plot .xtick text")
    ticks = page.page.locator(".js-plotly-plot .xtick text").all_text_contents()
    assert 'model ‹img src=x onerror="window.__pwned=1"›' in ticks, ticks
    assert '‹b›bold-model‹/b› ‹a href="https://example.invalid/"›ext‹/a› [U+202E]right' in ticks, ticks
    svg = page.page.evaluate(
        """() => ({links: document.querySelectorAll('.js-plotly-plot svg a').length,
            bold: [...document.querySelectorAll('.js-plotly-plot tspan')].filter(t => /bold/.test(t.getAttribute('style') || '')).length})"""
    )
    assert svg == {"links": 0, "bold": 0}, svg
    # the same names in the page's tables, as text
    assert BIG_MODEL.replace("\u202e", "[U+202E]") in page.text("#page")


@browser_test
def test_every_shipped_page_keeps_hostile_text_inert(page):
    """Failures, agreement, analysis and model pages list the hostile model, tool and annotator names."""
    from trajlab.dashboard import load_dashboards

    for p in load_dashboards([]).pages:
        t0 = time.monotonic()
        page.goto(p.path)
        page.page.wait_for_function(
            "() => !document.querySelector('[data-dash-is-loading]') && "
            "[...document.querySelectorAll('.panel-body')].every(b => b.children.length > 0)"
        )
        if any(x.kind == "figure" for x in p.panels):
            page.page.wait_for_function(
                "() => document.querySelectorAll('.js-plotly-plot .main-svg, .msg-warn, .msg-error').length > 0"
            )
        _rendered(page, SANE_S, t0)
        assert page.page.locator(".msg-error").all_inner_texts() == [], p.id
        plots = page.page.evaluate(
            """() => ({links: document.querySelectorAll('.js-plotly-plot svg a').length,
                raw: [...document.querySelectorAll('.js-plotly-plot text')].map(t => t.textContent)
                    .filter(t => t.includes('<') || t.includes('\u202e') || t.includes('sk-proj'))})"""
        )
        assert plots == {"links": 0, "raw": []}, (p.id, plots)
        assert page.page.evaluate(INJECTED)["pwned"] == "undefined", p.id
    # the agreement page names the lab's hostile annotator, as text
    page.goto("/agreement")
    page.wait_text("#page", HOSTILE_TOOL)


# -- the text helpers, without a browser --------------------------------------------------------------


def test_bidi_controls_are_shown_not_obeyed():
    from trajlab.dashboard import clean_block, clean_line

    assert clean_line(f"mv {RTL} /tmp/") == "mv report_[U+202E]fdp.exe /tmp/"
    every = "".join(chr(c) for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)])
    want = "".join(f"[U+{c:04X}]" for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)])
    assert clean_block(f"a{every}b") == f"a{want}b"
    # marks and joiners are text: Hebrew with a right-to-left mark, emoji ZWJ sequences stay as they are
    assert clean_block("שלום\u200f abc") == "שלום\u200f abc"
    assert clean_block(EMOJI) == EMOJI and clean_line(EMOJI) == EMOJI


def test_clean_block_cleans_only_a_head_of_huge_text():
    from trajlab.dashboard import clean_block

    words = "password=abcd token key sk- " * 80_000  # 2.2 MB of secret-looking words
    out = clean_block(words, 1000)
    shown, note = out.rsplit("\n", 1)
    assert len(shown) == 1000 and "abcd" not in shown and shown.startswith("password=[REDACTED:")
    assert note == f"… [{len(words) - 1000:,} more characters not shown]"
    assert clean_block("x" * 5000, 1000).endswith("\n… [4,000 more characters not shown]")
    assert clean_block("x" * 1000, 1000) == "x" * 1000
    # escapes shrink the head so its end would show: a secret cut by the head's end is held back
    cut = "\x00" * 387 + " PASSWORD=hun" + "ter2secret" + "z" * 1000
    out = clean_block(cut, 100)
    assert "PASSWORD" not in out and "hun" not in out
    assert out == f"\n… [{len(cut) - 400 + 13:,} more characters not shown]"
    # the same secret inside the head is redacted as a whole
    assert (
        clean_block("\x00" * 10 + " PASSWORD=hunter2secret", 100) == " PASSWORD=[REDACTED:secret_assignment]"
    )
