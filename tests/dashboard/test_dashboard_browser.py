"""The dashboard in a real browser: Debian Chromium driven by Playwright against a server on 127.0.0.1.

Walks runs -> filter -> trajectory -> click a node -> review, checks the annotation landed on disk and the
lab was not written, that the planted `<script>`/`<img onerror>` tool output shows as text, that secrets
are redacted, that a 2,000-step DAG draws progressively and unfolds, and that every page renders.
Screenshots of each page go to tests/artifacts/dashboard/.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from dash_labs import example_lab

pytestmark = [pytest.mark.browser, pytest.mark.slow]

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
REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts" / "dashboard"
FIX = REPO / "tests" / "fixtures" / "dashboard" / "pages"
WAIT = 60_000  # ms; a loaded 2-core machine renders slowly


@pytest.fixture(scope="module")
def ex(tmp_path_factory):
    return example_lab(tmp_path_factory.mktemp("dash-browser"))


@pytest.fixture(scope="module")
def server(ex):
    from trajlab.dashboard import DashboardServer, create_app

    app = create_app(ex.lab, annotations=ex.annotations, dataset="default", dashboards=[FIX])
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


class Watched:
    """A page that records dialogs (an alert would mean injected script ran) and JavaScript errors."""

    def __init__(self, browser, base: str):
        self.page = browser.new_page(viewport={"width": 1500, "height": 1000})
        self.page.set_default_timeout(WAIT)
        self.base = base.rstrip("/")
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def goto(self, path: str) -> None:
        self.page.goto(self.base + path)
        self.page.wait_for_selector("#page > *")

    def shot(self, name: str) -> None:
        """A full-page screenshot from the top, with the trajectory page's side column (a sticky box that
        scrolls on its own) shown whole so the labels panel is in the picture."""
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.page.evaluate(
            "() => { window.scrollTo(0, 0); document.querySelectorAll('.traj-side').forEach(e => {"
            " e.dataset.style = e.getAttribute('style') || ''; e.style.position = 'static';"
            " e.style.maxHeight = 'none'; e.style.overflow = 'visible'; }); }"
        )
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
        self.page.evaluate(
            "() => document.querySelectorAll('.traj-side').forEach(e => e.setAttribute('style', e.dataset.style))"
        )

    def choose(self, button: str, option: str) -> None:
        """Pick `option` in the Dash dropdown whose button matches the selector `button`."""
        self.page.locator(button).click()
        self.page.locator("[role=option]", has_text=option).first.click()
        self.page.keyboard.press("Escape")

    def wait_text(self, selector: str, text: str) -> None:
        self.page.wait_for_function(
            "([s, t]) => { const e = document.querySelector(s); return e && e.innerText.includes(t); }",
            arg=[selector, text],
        )

    def wait_dag(self, total: int | None = None) -> tuple[int, int]:
        """Wait until every chunk of the DAG is drawn (of `total` nodes, if given); returns (drawn, total)."""
        self.page.wait_for_function(
            "(want) => { const t = (document.querySelector('#dag-info') || {}).innerText || '';"
            " const m = t.match(/drawn ([\\d,]+) of ([\\d,]+) nodes/); if (!m) return false;"
            " const n = +m[2].replace(/,/g, ''); return m[1] === m[2] && (want === null || n === want)"
            " && window.trajlabDag && window.trajlabDag.count() === n; }",
            arg=total,
        )
        info = self.page.inner_text("#dag-info")
        drawn, total = info.split("drawn ")[1].split(" nodes")[0].split(" of ")
        return int(drawn.replace(",", "")), int(total.replace(",", ""))

    def nodes(self, cls: str | None = None) -> list[dict]:
        """The nodes drawn on the DAG canvas (with class `cls`), from assets/dag.js's read API."""
        return self.page.evaluate("(c) => window.trajlabDag.nodes(c)", cls)

    def click_node(self, node_id: str) -> None:
        """A real mouse click on a node of the DAG canvas (centered in view first)."""
        assert self.page.evaluate("(id) => window.trajlabDag.center(id)", node_id), node_id
        self.page.wait_for_timeout(100)
        x, y = self.page.evaluate("(id) => window.trajlabDag.clientPoint(id)", node_id)
        self.page.mouse.click(x, y)

    def close(self) -> None:
        self.page.close()


@pytest.fixture()
def page(browser, server):
    w = Watched(browser, server.url)
    yield w
    w.close()
    assert w.errors == [], w.errors
    assert w.dialogs == [], f"a dialog opened (injected script ran): {w.dialogs}"


def _counts(ex, sql: str, params=None) -> tuple:
    from trajlab.store import Lab

    return Lab.open(ex.lab).connect().execute(sql, params or []).fetchone()


def test_walk_runs_filter_trajectory_node_review(page, ex):
    manifest = (ex.lab / "lab.json").read_bytes()
    n_all, n_fail = _counts(
        ex, "SELECT count(*), count(*) FILTER (WHERE outcome = 'failure') FROM trajectories"
    )
    n_model = _counts(
        ex, "SELECT count(*) FROM trajectories WHERE outcome = 'failure' AND model = ?", [ex.failed_model]
    )[0]

    page.goto("/")
    page.wait_text("#runs-summary", "RUNS")
    assert page.page.inner_text("#runs-summary .card-value >> nth=0") == str(n_all)
    page.shot("01-runs")

    page.page.fill("#annotator", "alice")
    page.page.press("#annotator", "Enter")
    page.choose("#runs-filter-box-outcome button.dash-dropdown", "failure")
    page.page.wait_for_function(
        f"() => document.querySelector('#runs-summary .card-value').innerText === '{n_fail}'"
    )
    page.choose("#runs-filter-box-model button.dash-dropdown", ex.failed_model)
    page.page.wait_for_function(
        f"() => document.querySelector('#runs-summary .card-value').innerText === '{n_model}'"
    )
    rows = page.page.locator("#runs-table tbody tr").count() - 1  # minus the header row
    assert rows == n_model
    outcomes = page.page.locator("#runs-table td[data-dash-column=outcome]").all_inner_texts()
    assert set(outcomes) == {"failure"}
    page.shot("02-runs-filtered")

    page.page.locator("#runs-table td[data-dash-column=trajectory_id]", has_text=ex.failed_tid).click()
    page.wait_text("#traj-title-id", ex.failed_tid)
    assert page.page.url.endswith(f"/trajectory/{ex.failed_tid}")
    drawn, total = page.wait_dag()
    n_steps = _counts(ex, "SELECT n_steps FROM trajectories WHERE trajectory_id = ?", [ex.failed_tid])[0]
    assert drawn == total == n_steps  # small run: nothing folded
    # the judge label under review, its rationale shown as text (it carries an <img onerror>)
    page.wait_text("#labels-body", "fixture-judge")
    assert page.page.inner_text("#judge-category") == ex.judge_category
    assert "<img src=x onerror=alert(2)>" in page.page.inner_text("#labels-body")
    assert "<b>quoted</b>" in page.page.inner_text("#labels-body")
    assert [n["step"] for n in page.nodes("decisive")] == [n_steps - 1]
    assert [n["step"] for n in page.nodes("evidence")] == [3]
    page.shot("03-trajectory")

    # a step link in the labels panel opens that step in the inspector
    page.page.locator("#labels-body button.link-button", has_text=f"step {n_steps - 1}").first.click()
    page.wait_text("#inspector-title", f"Step {n_steps - 1}")

    page.click_node("n3")
    page.wait_text("#inspector-title", "Step 3")
    step3 = _counts(
        ex, "SELECT command, exit_code FROM steps WHERE trajectory_id = ? AND step_index = 3", [ex.failed_tid]
    )
    inspector = page.page.inner_text("#inspector")
    assert step3[0] in inspector and f"exit code\t{step3[1]}" in inspector
    page.page.click("#review-use-selected")
    page.page.wait_for_function("() => document.querySelector('#review-decisive').value === '3'")
    page.choose("button#review-category", "video_perception")
    page.page.fill("#review-evidence", "3, 4")
    note = "<script>alert('note')</script> frames were fine"
    page.page.fill("#review-note", note)
    page.page.click("#review-save")
    page.wait_text("#review-msg", "saved: overridden as video_perception")
    page.wait_text("#human-labels", "alice")
    page.shot("04-trajectory-reviewed")

    path = ex.annotations / "default" / "alice.jsonl"
    (rec,) = [json.loads(x) for x in path.read_text().splitlines()]
    assert rec["trajectory_id"] == ex.failed_tid
    assert rec["category"] == "video_perception"
    assert rec["decisive_step_index"] == 3 and rec["evidence_steps"] == [3, 4]
    assert rec["review_action"] == "overridden" and rec["reviews_label_id"] == "jl_fixture_llm"
    assert rec["annotator"] == "alice" and rec["note"] == note

    # change of mind: accept the judge label instead (a record that supersedes the first)
    page.page.click("#review-accept")
    page.wait_text("#review-msg", "accepted as reasoning_calculation")
    first, second = [json.loads(x) for x in path.read_text().splitlines()]
    assert first == rec
    assert second["supersedes"] == rec["record_id"] and second["category"] == "reasoning_calculation"

    # the agreement page counts alice's live label; the queue no longer offers the run to her
    page.goto("/agreement")
    page.wait_text("#agreement-summary", "Fleiss")
    assert "alice (human)" in page.page.inner_text(".agreement-head")
    page.shot("05-agreement")
    page.goto("/review")
    page.page.wait_for_selector(".panel-queue .dash-spreadsheet, .panel-queue .msg")
    assert ex.failed_tid not in page.page.inner_text(".panel-queue")

    assert (ex.lab / "lab.json").read_bytes() == manifest, "the app wrote to the lab"


def test_a_decisive_step_that_is_not_a_step_number_is_refused(page, ex):
    """What is typed in the decisive-step box is what is saved, or the save is refused: `2.7` or `-1`
    must not become a label with no decisive step at all."""
    path = ex.annotations / "default" / "dora.jsonl"
    (tid,) = _counts(  # a run nobody else reviews in these tests
        ex,
        "SELECT trajectory_id FROM trajectories WHERE outcome = 'failure' AND n_steps > 3"
        " AND trajectory_id <> ? ORDER BY trajectory_id LIMIT 1",
        [ex.failed_tid],
    )
    page.goto(f"/trajectory/{tid}")
    page.page.fill("#annotator", "dora")
    page.page.press("#annotator", "Enter")
    page.wait_text("#review-as", "reviewing as dora")
    page.choose("button#review-category", "video_perception")
    for bad in ("2.7", "-1"):
        page.page.fill("#review-decisive", bad)
        page.page.click("#review-save")
        page.page.wait_for_function(
            "(v) => { const t = (document.querySelector('#review-msg') || {}).innerText || '';"
            " return t.includes('saved:') || t.includes(`not '${v}'`); }",
            arg=bad,
        )
        msg = page.page.inner_text("#review-msg")
        assert "decisive step must be one step number" in msg and f"not '{bad}'" in msg, msg
        assert not path.exists(), path.read_text()
    page.page.fill("#review-decisive", "3")
    page.page.click("#review-save")
    page.wait_text("#review-msg", "as video_perception, decisive step 3")
    (rec,) = [json.loads(x) for x in path.read_text().splitlines()]
    assert rec["decisive_step_index"] == 3


def test_xss_payload_is_shown_as_text(page, ex):
    page.goto(f"/trajectory/{ex.xss_tid}")
    page.wait_dag()
    label = page.page.evaluate("() => window.trajlabDag.node('n3').label")
    assert label.startswith("3 · curl -s http://127.0.0.1:8000/notes.html")
    page.click_node("n3")
    page.wait_text("#inspector-title", "Step 3")
    out = page.page.inner_text("#inspector-output")
    assert "<script>alert('xss')</script>" in out
    assert "<img src=x onerror=alert(1)>" in out
    injected = page.page.evaluate(
        """() => ({
            imgs: document.querySelectorAll('img[src="x"], img[onerror]').length,
            scripts: [...document.scripts].filter(s => s.textContent.includes("alert(")).length,
            title: [...document.querySelectorAll('title')].map(t => t.textContent),
        })"""
    )
    assert injected["imgs"] == 0 and injected["scripts"] == 0
    assert "Media notes" not in " ".join(injected["title"])
    # the timeline shows the same step as text too
    page.page.click("text=Timeline")
    page.page.wait_for_selector("#timeline td[data-dash-column=what]")
    cells = page.page.locator("#timeline td[data-dash-column=what]").all_inner_texts()
    assert any("curl -s http://127.0.0.1:8000/notes.html" in c for c in cells)
    page.page.wait_for_timeout(1500)  # give any injected handler time to fire
    page.shot("06-xss-as-text")
    # back on the DAG tab: a new canvas, drawn again and clickable
    page.page.click("text=Step DAG")
    page.page.wait_for_selector("#dag-canvas")
    page.click_node("n2")
    page.wait_text("#inspector-title", "Step 2")
    assert page.page.evaluate("() => window.trajlabDag.selected()") == "n2"


def test_secrets_are_redacted(page, ex):
    page.goto(f"/trajectory/{ex.secrets_tid}")
    page.wait_dag()
    page.click_node("n3")
    page.wait_text("#inspector-title", "Step 3")
    out = page.page.inner_text("#inspector-output")
    assert "OPENAI_API_KEY=[REDACTED:" in out and "HF_TOKEN=[REDACTED:" in out
    html = page.page.content()
    assert "sk-proj-" not in html and "hf_" not in html.split("HF_TOKEN=")[1][:20]


def test_long_dag_draws_progressively_and_unfolds(page, ex):
    from trajlab.dag import load_dag
    from trajlab.dashboard import build_view

    default = build_view(load_dag(ex.lab, ex.long_tid))
    page.goto(f"/trajectory/{ex.long_tid}")
    drawn, total = page.wait_dag()
    assert drawn == total == default.n_visible < ex.long_steps // 3
    assert len(page.nodes("agent")) == 3
    page.shot("07-long-dag-folded")

    # unfold the first folded run by clicking it
    gid, members = next(iter(default.groups.items()))
    page.click_node(gid)
    page.page.wait_for_function(f"() => window.trajlabDag.count() === {default.n_visible + len(members) - 1}")

    # everything unfolded: 2,000 nodes arrive in chunks (400 first), top first
    page.page.evaluate(
        """() => { window.__seen = []; const el = document.querySelector('#dag-info');
            new MutationObserver(() => window.__seen.push(el.innerText)).observe(el, {childList: true, subtree: true, characterData: true}); }"""
    )
    page.page.locator("#dag-collapse input").uncheck()
    page.page.locator("#dag-agents .dash-dropdown-clear").click()
    drawn, total = page.wait_dag(ex.long_steps)
    assert drawn == total == ex.long_steps
    seen = page.page.evaluate("() => window.__seen")
    assert any(f"drawn 400 of {ex.long_steps:,} nodes" in s for s in seen), seen
    page.shot("08-long-dag-unfolded")


def test_unfolded_long_dag_on_the_canvas(page, ex):
    """All 2,000 nodes and every edge of the unfolded run are drawn as the server built them; a click
    deep in the graph opens the step; the wheel zooms and a drag pans."""
    from collections import Counter

    from trajlab.dashboard import create_app
    from trajlab.dashboard._page_trajectory import dag_view
    from trajlab.figures import MODALITY_COLORS

    ctx = create_app(ex.lab, annotations=ex.annotations, dataset="default").trajlab
    view = dag_view(ctx, ex.long_tid, False, 4, [], [])
    nodes = [el for el in view.elements if "source" not in el["data"]]
    edges = [el["data"] for el in view.elements if "source" in el["data"]]
    page.goto(f"/trajectory/{ex.long_tid}?fold=0&agents=none")
    drawn, total = page.wait_dag(ex.long_steps)
    assert drawn == total == len(nodes) == ex.long_steps
    drawn_nodes = page.nodes()
    assert [n["id"] for n in drawn_nodes] == [el["data"]["id"] for el in nodes]
    assert [n["classes"] for n in drawn_nodes] == [el["classes"].split() for el in nodes]
    decisive = [n["step"] for n in page.nodes("decisive")]
    assert len(decisive) == 1 and decisive[0] in range(ex.long_steps)
    assert len(page.nodes("evidence")) >= 1
    # every edge, by type; parallel edges of different types between two nodes bend apart
    assert page.page.evaluate("() => window.trajlabDag.edgeTypes()") == dict(
        Counter(e["type"] for e in edges)
    )
    pairs = Counter(frozenset((e["source"], e["target"])) for e in edges)
    bent = sum(1 for e in page.page.evaluate("() => window.trajlabDag.edges()") if e["bend"] != 0)
    assert bent == sum(c - c % 2 for c in pairs.values() if c > 1)
    # the pixel at a node's centre is its modality colour: it is really drawn
    step = 1500
    n = page.page.evaluate(f"() => window.trajlabDag.node('n{step}')")
    assert n["fill"] == MODALITY_COLORS[n["modality"]]
    assert page.page.evaluate(f"() => window.trajlabDag.center('n{step}')")
    page.page.wait_for_timeout(100)
    rgb = page.page.evaluate(
        f"""() => {{ const c = document.getElementById('dag-canvas'); const p = window.trajlabDag.clientPoint('n{step}');
            const r = c.getBoundingClientRect(); const k = c.width / r.width;
            return [...c.getContext('2d').getImageData(Math.round((p[0] - r.left) * k), Math.round((p[1] - r.top) * k), 1, 1).data].slice(0, 3); }}"""
    )
    assert "#" + "".join(f"{v:02X}" for v in rgb) == n["fill"].upper()
    page.click_node(f"n{step}")
    page.wait_text("#inspector-title", f"Step {step}")
    assert page.page.evaluate("() => window.trajlabDag.selected()") == f"n{step}"
    # wheel zooms around the pointer, a drag pans, a click without a node selects nothing new
    box = page.page.locator("#dag-canvas").bounding_box()
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    before = page.page.evaluate("() => window.trajlabDag.view()")
    page.page.mouse.move(cx, cy)
    page.page.mouse.wheel(0, 400)
    page.page.wait_for_function(f"() => window.trajlabDag.view().zoom < {before['zoom']}")
    zoomed = page.page.evaluate("() => window.trajlabDag.view()")
    page.page.mouse.move(cx + 300, cy)
    page.page.mouse.down()
    page.page.mouse.move(cx + 200, cy + 50, steps=5)
    page.page.mouse.up()
    panned = page.page.evaluate("() => window.trajlabDag.view()")
    assert panned["zoom"] == zoomed["zoom"]
    assert (
        round(panned["pan"]["x"] - zoomed["pan"]["x"]) == -100
        and round(panned["pan"]["y"] - zoomed["pan"]["y"]) == 50
    )
    assert page.page.evaluate("() => window.trajlabDag.selected()") == f"n{step}"  # a drag is not a click
    page.shot("10-long-dag-unfolded-zoomed")


def test_every_page_renders(page, server, ex):
    from trajlab.dashboard import load_dashboards

    spec = load_dashboards([FIX])
    for i, p in enumerate(spec.pages):
        page.goto(p.path)
        page.page.wait_for_selector(f"#page-{p.id}") if p.id != "runs" else page.wait_text(
            "#runs-summary", "RUNS"
        )
        page.page.wait_for_function(
            "() => !document.querySelector('[data-dash-is-loading]') && "
            "[...document.querySelectorAll('.panel-body')].every(b => b.children.length > 0)"
        )
        if any(x.kind == "figure" for x in p.panels):
            # plotly.js loads lazily: wait until the figure is drawn (or a note says why it is not)
            page.page.wait_for_function(
                "() => document.querySelectorAll('.js-plotly-plot .main-svg, .msg-warn, .msg-error').length > 0"
            )
        page.shot(f"page-{i:02d}-{p.id}")
        errors = page.page.locator(".msg-error").all_inner_texts()
        assert errors == [], (p.id, errors)
        if any(x.kind == "figure" for x in p.panels):
            graphs = page.page.locator(".js-plotly-plot").count()
            notes = page.page.locator(".msg-warn").all_inner_texts()
            assert graphs + len(notes) >= 1, p.id
    # the user's page: its filter reaches the SQL as a parameter
    page.goto("/custom/tool-errors")
    page.page.wait_for_selector(".panel-sql .dash-spreadsheet")
    want_all = _counts(
        ex, "SELECT count(DISTINCT trajectory_id) FROM tool_calls WHERE is_error OR timed_out"
    )[0]
    page.wait_text(".big-number", str(want_all))
    want_codex = _counts(
        ex,
        "SELECT count(DISTINCT trajectory_id) FROM tool_calls WHERE (is_error OR timed_out) AND runner = 'codex'",
    )[0]
    assert want_codex != want_all
    page.choose("#page-tool-errors button.dash-dropdown", "codex")
    page.page.wait_for_function(f"() => document.querySelector('.big-number').innerText === '{want_codex}'")
    assert "<b>raw HTML stays text</b>" in page.page.inner_text(".panel.markdown")
    page.shot("09-custom-page")


def test_server_binds_loopback_and_sends_security_headers(server):
    import urllib.request

    assert server.host == "127.0.0.1"
    with urllib.request.urlopen(server.url + "_trajlab/health", timeout=30) as r:
        body = json.loads(r.read())
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        assert "default-src 'self'" in r.headers["Content-Security-Policy"]
    assert body["ok"] and body["trajectories"] == 25


def teardown_module() -> None:
    # keep the screenshots, drop nothing else: artefacts are git-ignored
    if ARTIFACTS.exists() and not any(ARTIFACTS.iterdir()):
        shutil.rmtree(ARTIFACTS)
