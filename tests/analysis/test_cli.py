from __future__ import annotations

import json

import pyarrow.parquet as pq
from analysis_labs import simulated_lab
from click.testing import CliRunner

from trajlab.cli import cli


def _run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_gaps_command_table_and_files(tmp_path):
    lab = simulated_lab(tmp_path / "sim", 1, 80, 0.7, 0.2, seed=1)
    r = _run("gaps", str(lab.root), "--n-boot", "200", "-q")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == (
        "1 significant of 2 supported rows (2 in all; fisher test, holm, alpha 0.05, 200 bootstrap replicates)"
    )
    assert lines[1].split()[:5] == ["tool", "n_calls", "share_success", "share_failure", "gap"]
    probe = next(line for line in lines if line.startswith("probe"))
    assert probe.rstrip().endswith("yes: success")
    out = tmp_path / "g.json"
    r = _run("gaps", str(lab.root), "--n-boot", "50", "-q", "--out", str(out))
    assert r.exit_code == 0 and f"wrote 2 rows to {out}" in r.output
    rows = json.loads(out.read_text())
    assert rows[0]["tool"] == "probe" and "gap_ci_low" in rows[0] and "usage_gap_ci_high" in rows[0]
    r = _run("gaps", str(lab.root), "--n-boot", "0", "-q", "--key", "tool_modality", "--format", "markdown")
    assert "| probe |" in r.output  # the simulated calls have no modality: the key is the tool alone
    r = _run("gaps", str(lab.root), "--n-boot", "0", "-q", "--significant", "--format", "csv")
    assert r.output.splitlines()[0].startswith("tool,n_calls,calls_success")
    assert len(r.output.splitlines()) == 2  # header + probe


def test_gaps_command_counts_source(tmp_path):
    lab = simulated_lab(tmp_path / "sim", 1, 80, 0.7, 0.2, seed=1)
    outs = {}
    for counts in ("steps", "tool_usage", "auto"):
        r = _run("gaps", str(lab.root), "--n-boot", "0", "-q", "--counts", counts, "--format", "csv")
        assert r.exit_code == 0, r.output
        outs[counts] = r.output
    assert outs["steps"] == outs["tool_usage"] == outs["auto"]  # the same numbers from either source
    assert (lab.root / "_cache").is_dir()  # --counts tool_usage built the materialized counts
    r = CliRunner().invoke(cli, ["gaps", str(lab.root), "--counts", "nope"])
    assert r.exit_code == 2 and "'nope' is not one of" in r.output


def test_gaps_command_reports_what_is_missing(builder):
    builder.traj("a").traj("b")
    builder.call("a", "ls")
    r = CliRunner().invoke(cli, ["gaps", str(builder.build().root), "-q"])
    assert r.exit_code == 0
    assert "missing: no outcomes" in r.output and "trajlab-meta.jsonl" in r.output
    assert "tool  n_calls" not in r.output  # no empty table


def test_analyze_list_show_sql_and_run(builder, tmp_path):
    builder.traj("a", "success", model="A").traj("b", "failure", model="B")
    builder.call("a", "ffprobe", error=True, command="ffprobe x")
    builder.call("a", "ffprobe", command="ffprobe x")
    builder.call("b", "python")
    lab = str(builder.build().root)
    r = _run("analyze", "list")
    assert r.exit_code == 0
    names = [line.split()[0] for line in r.output.splitlines()[2:]]
    assert {"gaps", "capability", "tokens", "failures", "funnel", "recovery", "tools"} <= set(names)
    r = _run("analyze", "gaps", "--show-sql", "--by", "model,effort")
    assert "SELECT trajectory_id, outcome = 'success' AS success, model, reasoning_effort," in r.output
    assert "{{" not in r.output
    r = _run("analyze", "capability", lab, "--format", "csv")
    assert r.output.splitlines()[0] == (
        "model,capability,n_traj,avg_turns,n_calls,call_share,usage_rate,calls_per_traj,traj_share_when_used"
    )
    r = _run("analyze", "failures", lab, "-p", "source=gold")
    assert "missing: no gold labels" in r.output
    out = tmp_path / "funnel.parquet"
    r = _run("analyze", "funnel", lab, "-p", "bins=4", "--out", str(out))
    assert r.exit_code == 0
    assert pq.read_table(out).num_rows == 4
    rec = pq.read_table(tmp_path / "funnel.recovery.parquet").to_pylist()
    assert [(x["tool"], x["n_errors"], x["recovery_rate"]) for x in rec] == [("ffprobe", 1, 1.0)]
    # stdout in json/csv holds one parseable table; the companion one is named on stderr
    r = CliRunner().invoke(cli, ["analyze", "funnel", lab, "-p", "bins=4", "--format", "json"])
    assert r.exit_code == 0 and len(json.loads(r.stdout)) == 4, r.output
    assert "a `recovery` table (1 rows) is not printed in json" in r.stderr
    assert "--out FILE.json writes it to FILE.recovery.json" in r.stderr
    r = CliRunner().invoke(cli, ["analyze", "funnel", lab, "-p", "bins=4", "--format", "csv"])
    assert len(r.stdout.splitlines()) == 5 and "recovery" not in r.stdout
    assert "recovery:" in _run("analyze", "funnel", lab, "-p", "bins=4").output  # tables: both
    r = _run("analyze", "tools", lab, "--by", "model", "--format", "json")
    assert [(x["model"], x["tool"]) for x in json.loads(r.output)] == [("A", "ffprobe"), ("B", "python")]


def test_analyze_bad_input_is_a_message_not_a_traceback(builder, tmp_path):
    builder.traj("a", "success")
    lab = str(builder.build().root)
    runner = CliRunner()
    r = runner.invoke(cli, ["analyze", "nosuch", lab])
    assert r.exit_code == 1 and "Error: no analysis named 'nosuch'" in r.output
    bad = tmp_path / "bad.sql"
    bad.write_text("SELECT nope FROM trajectories")
    r = runner.invoke(cli, ["analyze", str(bad), lab])
    assert r.exit_code == 1 and "nope" in r.output and "views available:" in r.output
    r = runner.invoke(cli, ["analyze", "gaps", lab, "-p", "bins=3"])
    assert r.exit_code == 2 and "unknown parameter(s) bins for gaps" in r.output
    r = runner.invoke(cli, ["analyze", "tools", lab, "-p", "x=1"])
    assert r.exit_code == 1 and "this query takes no parameters" in r.output
    r = runner.invoke(cli, ["gaps", lab, "--by", "colour"])
    assert r.exit_code == 1 and "cannot group by 'colour'" in r.output
    r = runner.invoke(cli, ["analyze", "tools", str(tmp_path / "nolab")])
    assert r.exit_code == 1 and "no such lab" in r.output
    r = runner.invoke(cli, ["analyze", "tools"])
    assert r.exit_code == 2 and "give the LAB" in r.output


def test_empty_results_stay_parseable_in_csv_and_json(builder, tmp_path):
    # no significant gap and a query without rows: csv gets its header, json `[]`, not "(no rows)"
    for i in range(6):
        builder.traj(f"s{i}", "success").traj(f"f{i}", "failure")
        builder.call(f"s{i}", "ls"), builder.call(f"f{i}", "ls")
    lab = str(builder.build().root)
    r = _run("gaps", lab, "--n-boot", "0", "-q", "--significant", "--format", "csv")
    assert r.exit_code == 0 and r.stdout.splitlines()[0].startswith("tool,n_calls,calls_success")
    assert len(r.stdout.splitlines()) == 1
    r = _run("gaps", lab, "--n-boot", "0", "-q", "--significant", "--format", "json")
    assert json.loads(r.stdout) == []
    q = tmp_path / "none.sql"
    q.write_text("SELECT tool, count(*) AS n FROM tool_calls WHERE is_error GROUP BY ALL")
    r = _run("analyze", str(q), lab, "--format", "json")
    assert json.loads(r.stdout) == []
    r = _run("analyze", str(q), lab, "--format", "csv")
    assert r.stdout.splitlines() == ["tool,n"]
    r = _run("analyze", str(q), lab, "--format", "jsonl")
    assert r.stdout.strip() == ""
    r = _run("analyze", str(q), lab)
    assert "(no rows)" in r.stdout  # the terminal table still says so


def test_analyze_user_sql_with_decimals_and_repeated_names(builder, tmp_path):
    builder.traj("a", "success")
    lab = str(builder.build().root)
    q = tmp_path / "q.sql"
    q.write_text("SELECT 0.5 AS share, 1 AS n, 2 AS n")
    r = CliRunner().invoke(cli, ["analyze", str(q), lab, "--format", "json"])
    assert r.exit_code == 0 and json.loads(r.output) == [{"share": 0.5, "n": 1, "n_1": 2}], r.output
    out = tmp_path / "q.json"
    r = CliRunner().invoke(cli, ["analyze", str(q), lab, "--out", str(out)])
    assert r.exit_code == 0 and json.loads(out.read_text()) == [{"share": 0.5, "n": 1, "n_1": 2}]
