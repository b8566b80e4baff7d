"""`trajlab judge ...` from the command line: default command, rules fallback, eval, show, render, errors."""

from __future__ import annotations

import json

from click.testing import CliRunner
from judge_labs import make_lab

from trajlab.cli import cli


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_judge_lab_without_a_model_runs_the_rules_judge(tmp_path, monkeypatch) -> None:
    for var in ("TRAJLAB_JUDGE_MODEL", "TRAJLAB_JUDGE_BASE_URL", "OPENAI_BASE_URL", "TRAJLAB_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    lab = make_lab(tmp_path / "lab", "omni_runs")
    r = run("judge", str(lab.root), "--no-progress")
    assert r.exit_code == 0
    assert "no judge model configured" in r.stderr
    assert "rules judge (rules-2), taxonomy omni-failure v1.0.0" in r.stdout
    assert "status: labeled=2, unjudgeable=1" in r.stdout
    r = run("judge", "show", str(lab.root))
    assert r.exit_code == 0 and "tool_infrastructure" in r.stdout and "t_video_skip" in r.stdout
    r = run("judge", "show", str(lab.root), "t_audio_infra", "--format", "json")
    rows = json.loads(r.stdout)
    assert rows[0]["decisive_step_index"] == 3 and rows[0]["judge"] == "rules"


def test_llm_judge_from_the_cli_with_dry_run_then_real_run(tmp_path, scripted_llm, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    lab = make_lab(tmp_path / "lab", "omni_runs")
    srv = scripted_llm()
    base = ("judge", str(lab.root), "--model", "judge-test", "--base-url", srv.base_url, "--no-progress")
    r = run(*base, "--dry-run", "--price-in", "1", "--price-out", "2")
    assert r.exit_code == 0 and srv.n_requests == 0
    assert "DRY RUN (nothing sent): 3 trajectories selected" in r.stdout and "estimated cost: $" in r.stdout
    r = run(*base, "--concurrency", "2", "--json")
    rep = json.loads(r.stdout)
    assert rep["statuses"] == {"labeled": 3} and rep["requests"] == 3 and srv.n_requests == 3
    r = run(*base, "--only", "t_misheard,t_video_skip", "--force")
    assert r.exit_code == 0 and "2 judged" in r.stdout and "0 sent (0 retries), 2 from cache" in r.stdout
    ids = tmp_path / "ids.txt"
    ids.write_text("t_success\n")
    r = run(*base, "--only", f"@{ids}")
    assert "1 judged" in r.stdout and srv.n_requests == 4


def test_eval_cli(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    lab = make_lab(tmp_path / "lab", "omni_runs")
    run("judge", str(lab.root), "--rules", "--no-progress")
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        json.dumps(
            {"trajectory_id": "t_audio_infra", "category": "tool_infrastructure", "decisive_step_index": 3}
        )
        + "\n"
        + json.dumps(
            {"trajectory_id": "t_misheard", "category": "audio_perception", "decisive_step_index": 1}
        )
        + "\n"
    )
    r = run("judge", "eval", str(lab.root), "--gold", str(gold))
    assert r.exit_code == 0
    assert "rules judge (rules-2) vs 2 gold labels; coverage 50.0%" in r.stdout
    r = run("judge", "eval", str(lab.root), "--gold", str(gold), "--json", "-k", "2")
    res = json.loads(r.stdout)
    assert res["category"]["accuracy"] == 0.5 and res["decisive_step"]["within_2"] == 0.5


def test_render_shows_the_exact_request(tmp_path) -> None:
    lab = make_lab(tmp_path / "lab", "secrets")
    r = run("judge", "render", str(lab.root), "t_secrets", "--system")
    assert r.exit_code == 0
    assert "--- system ---" in r.stdout and "--- user ---" in r.stdout
    assert "<<<RUN " in r.stdout and "[REDACTED:openai_key]" in r.stdout
    assert "Sup3rS3cretPw" not in r.stdout


def test_bad_inputs_give_one_line_errors(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    lab = make_lab(tmp_path / "lab", "omni_runs")
    r = CliRunner().invoke(cli, ["judge", str(lab.root), "--rules", "--only", "t_nope,t_audio_infra"])
    assert r.exit_code == 1 and "Error: unknown trajectory ids: t_nope" in r.output
    r = CliRunner().invoke(cli, ["judge", str(tmp_path / "no-lab")])
    assert r.exit_code == 1 and "no such lab" in r.output
    r = CliRunner().invoke(cli, ["judge", str(lab.root), "--taxonomy", "nope"])
    assert r.exit_code == 1 and "Error: no taxonomy 'nope'" in r.output
    r = CliRunner().invoke(
        cli,
        ["judge", str(lab.root), "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--concurrency", "0"],
    )
    assert r.exit_code == 1 and "concurrency must be at least 1" in r.output
    r = CliRunner().invoke(cli, ["judge", "eval", str(lab.root)])
    assert r.exit_code == 2 and "give --gold FILE or --who-and-when" in r.output
    cfg = tmp_path / "trajlab.yaml"
    cfg.write_text("judge:\n  model: m\n  api_key: sk-should-not-be-here\n")
    r = CliRunner().invoke(cli, ["judge", str(lab.root), "--config", str(cfg)])
    assert r.exit_code == 1 and "do not store API keys in config files" in r.output


def test_unreachable_endpoint_ends_every_trajectory_with_an_error_status(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    lab = make_lab(tmp_path / "lab", "omni_runs")
    r = run(
        "judge",
        str(lab.root),
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--retries",
        "1",
        "--timeout",
        "2",
        "--no-progress",
    )
    # every request failed: the report is printed and the exit status says so (1), for scripts
    assert r.exit_code == 1 and "status: error=3" in r.stdout
    assert "every judge request failed (3 of 3 trajectories" in r.stderr
    rows = lab.refresh().read("judge_labels").to_pylist()
    assert {row["status"] for row in rows} == {"error"}
    assert all(row["status_reason"].startswith("request failed: connection error") for row in rows)


def test_selection_files_and_empty_selections_give_one_line_errors_not_tracebacks(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    lab = make_lab(tmp_path / "lab", "omni_runs")
    r = CliRunner().invoke(cli, ["judge", str(lab.root), "--rules", "--only", "@missing-ids.txt"])
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit | None), r.exception
    assert "Error: --only @missing-ids.txt: cannot read the file of trajectory ids" in r.output
    run("judge", str(lab.root), "--rules", "--no-progress")  # judge_labels exists from now on
    (tmp_path / "none.txt").write_text("\n")
    for only in ("@none.txt", ","):
        r = CliRunner().invoke(cli, ["judge", str(lab.root), "--rules", "--only", only, "--no-progress"])
        assert isinstance(r.exception, SystemExit | None), r.exception  # no pyarrow traceback
        assert r.exit_code == 0 and "nothing to judge" in r.output
    assert lab.refresh().rows("judge_labels") == 3  # the earlier labels are untouched


def test_eval_of_a_judge_or_model_without_labels_is_an_error_not_zero_accuracy(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    lab = make_lab(tmp_path / "lab", "omni_runs")
    run("judge", str(lab.root), "--rules", "--no-progress")
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"trajectory_id": "t_audio_infra", "category": "tool_infrastructure"}) + "\n")
    for extra in (["--judge", "llm"], ["--model", "rules-9"], ["--taxonomy", "multi-agent"]):
        r = CliRunner().invoke(cli, ["judge", "eval", str(lab.root), "--gold", str(gold), *extra])
        assert r.exit_code == 1, (extra, r.output)
        assert "Error: no judge labels for the" in r.output and "rules (rules-2, omni-failure)" in r.output
        assert "accuracy" not in r.output
