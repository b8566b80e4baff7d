"""The analyses on real runner output (../shared/corpus) and on the generated example runs."""

from __future__ import annotations

import pytest

from trajlab.analysis import (
    capability_usage,
    failure_distribution,
    gaps,
    media_strategy,
    run_sql,
    step_funnel,
    token_efficiency,
)


def _rows(res, *keys):
    return {tuple(r[k] for k in keys) if len(keys) > 1 else r[keys[0]]: r for r in res.table.to_pylist()}


@pytest.fixture(scope="module")
def corpus_lab(corpus_dir, tmp_path_factory):
    from trajlab.formats import adapters
    from trajlab.ingest import ingest

    names = {a.name for a in adapters()}
    paths = [corpus_dir / "codex", corpus_dir / "claude_code"]
    has_tb1 = "terminal-bench" in names and (corpus_dir / "terminal_bench_tb1").is_dir()
    if has_tb1:
        paths.append(corpus_dir / "terminal_bench_tb1")
    out = tmp_path_factory.mktemp("corpus") / "lab"
    ingest(paths, out, workers=1, progress=False)
    return out, has_tb1


@pytest.mark.corpus
def test_capability_and_tokens_on_codex_and_claude_code(corpus_lab):
    lab, _ = corpus_lab
    cap = capability_usage(lab)
    assert cap.missing == []
    calls = {
        r["model"]: r["n"]
        for r in run_sql(lab, "SELECT model, count(*) AS n FROM tool_calls GROUP BY ALL").to_pylist()
    }
    by_model: dict = {}
    for r in cap.table.to_pylist():
        by_model.setdefault(r["model"], []).append(r)
    assert {"claude-opus-4-6", "gpt-5.5"} <= set(by_model)
    for model, rows in by_model.items():
        assert [r["capability"] for r in rows] == ["external", "file", "compute", "other"]
        assert sum(r["n_calls"] for r in rows) == calls[model]
        if calls[model]:
            assert sum(r["call_share"] for r in rows) == pytest.approx(1.0)
    # real coding-agent sessions mostly read and search files
    assert _rows(cap, "model", "capability")[("gpt-5.5", "file")]["call_share"] > 0.5
    tok = _rows(token_efficiency(lab, by="model"), "model")
    assert tok["claude-opus-4-6"]["n_with_tokens"] >= 1 and tok["claude-opus-4-6"]["total_tokens"] > 1000
    assert tok["gpt-5.5"]["reasoning_tokens"] > 0
    assert failure_distribution(lab).missing == ["no judge labels"]


@pytest.mark.corpus
def test_gaps_and_funnel_on_real_runs(corpus_lab):
    lab, has_tb1 = corpus_lab
    res = gaps(lab, n_boot=100, progress=False)
    if not has_tb1:
        # Codex and Claude Code sessions record no outcome
        assert res.missing == ["no outcomes"] and res.num_rows == 0
    else:
        # two Terminal-Bench trials (one resolved): far too thin for any finding
        assert res.missing == []
        assert res.num_rows > 0
        assert not any(r["supported"] or r["significant"] for r in res.table.to_pylist())
        assert all(r["note"] for r in res.table.to_pylist())
        assert any("unknown outcome are left out" in n for n in res.notes)
    funnel = step_funnel(lab)
    n_traj = run_sql(lab, "SELECT count(*) AS n FROM trajectories").column("n")[0].as_py()
    assert {r["n_traj"] for r in funnel.table.to_pylist()} == {n_traj}
    errors = (
        run_sql(lab, "SELECT count(*) AS n FROM steps WHERE kind = 'tool_call' AND (is_error OR timed_out)")
        .column("n")[0]
        .as_py()
    )
    assert sum(r["n_errors"] for r in funnel.extras["recovery"].table.to_pylist()) == errors


@pytest.fixture(scope="module")
def example_lab(tmp_path_factory):
    examples = pytest.importorskip("trajlab.examples")
    from trajlab.ingest import ingest

    root = tmp_path_factory.mktemp("examples")
    examples.generate_examples(root / "ex", n_tasks=150, seed=7)
    ingest([root / "ex" / "runs"], root / "lab", workers=2, progress=False)
    return root / "lab"


@pytest.mark.slow
def test_planted_success_and_failure_patterns_are_significant(example_lab):
    # ffprobe before extracting is planted in successes
    tools = _rows(gaps(example_lab, progress=False), "tool")
    assert tools["ffprobe"]["significant"] and tools["ffprobe"]["favors"] == "success"
    # ad-hoc python3 OpenCV / media scripts are planted in failures; python arithmetic in successes
    keyed = _rows(gaps(example_lab, key="tool_modality", progress=False), "tool")
    assert keyed["python:video"]["significant"] and keyed["python:video"]["favors"] == "failure"
    assert keyed["python:compute"]["significant"] and keyed["python:compute"]["favors"] == "success"
    # whisper and frame sampling only apply to audio / video tasks: compare within a domain
    dom = _rows(gaps(example_lab, by="domain", key="tool_modality", progress=False), "domain", "tool")
    for cell in [("audio", "whisper:audio"), ("video", "ffmpeg:video"), ("audio", "ffprobe:audio")]:
        assert dom[cell]["significant"] and dom[cell]["favors"] == "success", cell
    assert dom[("video", "python:video")]["favors"] == "failure"


@pytest.mark.slow
def test_other_analyses_on_the_example_runs(example_lab):
    cap = capability_usage(example_lab, by=("model", "domain"))
    assert cap.missing == [] and cap.num_rows > 0
    tok = token_efficiency(example_lab)
    assert tok.missing == []
    assert any(r["pareto"] for r in tok.table.to_pylist())
    acc = [r["accuracy"] for r in tok.table.to_pylist()]
    assert all(0 <= a <= 1 for a in acc)
    funnel = step_funnel(example_lab)
    assert funnel.missing == [] and sum(r["first_errors"] for r in funnel.table.to_pylist()) > 0
    # the example runs that view images raw are planted with ~1,100-1,500 extra prompt tokens per image
    media = _rows(media_strategy(example_lab), "domain", "strategy")
    assert media[("audio", "tools")]["n_traj"] > 10 and media[("video", "mixed")]["avg_raw_reads"] >= 1
    raw_like = [r for (d, s), r in media.items() if d in ("image", "video") and s in ("raw", "mixed")]
    assert raw_like and all(r["prompt_per_call_vs_tools"] > 1.2 for r in raw_like)


TOOL_SEQ_WRONG = """
SELECT count(*) AS wrong FROM (
    SELECT tool_seq, row_number() OVER (
        PARTITION BY trajectory_id, coalesce(tool, tool_name, '(unknown)') ORDER BY step_index
    ) AS expected
    FROM steps WHERE kind = 'tool_call' AND tool_seq <> 0
) WHERE tool_seq IS DISTINCT FROM expected
"""


@pytest.mark.corpus
def test_tool_seq_numbers_real_calls_and_gaps_agree_across_sources(corpus_lab):
    """Ingest numbers every call of a tool in its trajectory (sub-agents included); the gap query
    counting first uses by tool_seq gives the table counted by a GROUP BY per trajectory and tool."""
    from trajlab.analysis import refresh_tool_usage
    from trajlab.normalize import program_not_found

    lab, _ = corpus_lab
    assert run_sql(lab, TOOL_SEQ_WRONG).to_pylist() == [{"wrong": 0}]
    # the calls numbered 0 are exactly those of a program the shell did not find and the harness's setup
    failed = run_sql(
        lab,
        "SELECT coalesce(tool, tool_name, '(unknown)') AS tool, exit_code, is_error, output, stderr, "
        "coalesce(json_extract_string(metadata, '$.phase') = 'setup', false) AS setup, tool_seq FROM steps "
        "WHERE kind = 'tool_call' AND (is_error OR exit_code = 127 OR tool_seq = 0 OR metadata LIKE '%setup%')",
    ).to_pylist()
    for r in failed:
        missing = program_not_found(r["tool"], r["exit_code"], r["is_error"], r["output"], r["stderr"])
        assert (r["tool_seq"] == 0) == (missing or r["setup"]), r
    assert any(r["tool_seq"] == 0 and not r["setup"] for r in failed)  # the corpus has such calls
    assert any(r["tool_seq"] == 0 and r["setup"] for r in failed)  # and Terminal-Bench's setup
    assert run_sql(lab, "SELECT count(*) AS n FROM steps WHERE kind <> 'tool_call' AND tool_seq <> 0")[
        "n"
    ].to_pylist() == [0]
    p0 = {"min_support": 0, "min_trajectories": 0}
    fast = run_sql(lab, "gaps", by="model", params=p0, counts="steps")
    refresh_tool_usage(lab, "tool", progress=False)
    assert fast.num_rows > 0 and fast.equals(run_sql(lab, "gaps", by="model", params=p0, counts="tool_usage"))
