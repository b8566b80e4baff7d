"""`trajlab judge` against bad endpoints, keys and labs: exit code, a message naming what is wrong, no
traceback, no secret in the output or the lab, and no label lost. Only local scripted servers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from judge_labs import load_fixture, make_lab
from llm_servers import Status, judge_answer

from trajlab.cli import cli

KEY = "sk-live-4f9c2a7e1b3d5f6a8c0e2b4d6f8a1c3e"
IDS = {"t_audio_infra", "t_misheard", "t_video_skip"}  # the failed runs of omni_runs


def run(*args: str, env: dict[str, str] | None = None):
    r = CliRunner().invoke(cli, list(args), env=env)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise AssertionError(f"trajlab {' '.join(args)} raised {r.exception!r}") from r.exception
    assert "Traceback" not in r.output
    return r


def lab_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def rows(lab) -> dict[str, dict]:
    return {r["trajectory_id"]: r for r in lab.refresh().read("judge_labels").to_pylist()}


def test_model_the_server_does_not_know_is_an_error_status_naming_it(tmp_path, scripted_llm, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def only_known(req, n):
        if req.get("model") != "judge-1":
            return Status(404, message=f"The model `{req.get('model')}` does not exist")
        return judge_answer(req)

    srv = scripted_llm(responder=only_known)
    lab = make_lab(tmp_path / "lab", "omni_runs")
    r = run("judge", str(lab.root), "--model", "judge-9", "--base-url", srv.base_url, "--no-progress")
    assert r.exit_code == 1  # every trajectory ends with status error: the run reports, then fails
    assert "every judge request failed (3 of 3 trajectories" in r.stderr
    assert "status: error=3" in r.stdout
    # the grouped reason keeps the HTTP status (it used to read "HTTP N") and names the model
    assert "3 x error: request failed: request refused (HTTP 404)" in r.stdout
    assert "The model `judge-9` does not exist" in r.stdout
    assert srv.n_requests == 3  # a 404 is not retried
    got = rows(lab)
    assert set(got) == IDS and {x["status"] for x in got.values()} == {"error"}
    # the right model name then labels every run: the error rows are retried, not kept as done
    r = run("judge", str(lab.root), "--model", "judge-1", "--base-url", srv.base_url, "--no-progress")
    assert "3 selected, 0 already done (skipped), 3 judged" in r.stdout and "status: labeled=3" in r.stdout
    assert r.exit_code == 0


def test_a_key_echoed_by_the_server_is_redacted_in_output_and_lab(tmp_path, scripted_llm, monkeypatch):
    monkeypatch.chdir(tmp_path)
    srv = scripted_llm(responder=lambda req, n: Status(401, message=f"Incorrect API key provided: {KEY}."))
    lab = make_lab(tmp_path / "lab", "omni_runs")
    args = ("judge", str(lab.root), "--model", "m", "--base-url", srv.base_url, "--no-progress")
    r = run(*args, "--api-key-env", "MY_JUDGE_KEY", env={"MY_JUDGE_KEY": KEY})
    assert r.exit_code == 1 and "status: error=3" in r.stdout
    assert KEY not in r.output and KEY[8:20] not in r.output
    assert "Incorrect API key provided: [REDACTED:api_key]" in r.stdout
    assert "request refused (HTTP 401)" in r.stdout and srv.n_requests == 3  # a 401 is not retried
    reasons = {x["status_reason"] for x in rows(lab).values()}
    assert len(reasons) == 1 and "[REDACTED:api_key]" in reasons.pop()
    assert not [p for p, b in lab_bytes(lab.root).items() if KEY.encode() in b]  # nowhere in the lab
    r = run("judge", "show", str(lab.root), "t_misheard", "--format", "json")
    assert KEY not in r.output and "REDACTED" in r.output


def test_a_named_key_variable_that_is_unset_stops_before_any_request(tmp_path, scripted_llm, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NO_SUCH_JUDGE_KEY", raising=False)
    srv = scripted_llm()
    lab = make_lab(tmp_path / "lab", "omni_runs")
    before = lab_bytes(lab.root)
    for extra in ((), ("--base-url", srv.base_url)):  # the OpenAI API, and a local server
        r = run("judge", str(lab.root), "--model", "m", "--api-key-env", "NO_SUCH_JUDGE_KEY", *extra)
        assert r.exit_code == 1
        assert "Error: the API key variable NO_SUCH_JUDGE_KEY (--api-key-env / api_key_env) is not set" in (
            r.output
        )
    r = run("judge", str(lab.root), "--model", "m", "--api-key-env", "NO_SUCH_JUDGE_KEY", "--base-url",
            srv.base_url, env={"NO_SUCH_JUDGE_KEY": ""})  # fmt: skip
    assert r.exit_code == 1 and "is not set or empty" in r.output
    assert srv.n_requests == 0 and lab_bytes(lab.root) == before
    # without --api-key-env a local server still needs no key (documented), and the key is never printed
    r = run("judge", str(lab.root), "--model", "m", "--base-url", srv.base_url, "--no-progress", "--json",
            env={"TRAJLAB_JUDGE_API_KEY": KEY})  # fmt: skip
    assert r.exit_code == 0 and '"labeled": 3' in r.stdout and KEY not in r.output


def test_a_lab_without_failed_trajectories_says_there_is_nothing_to_judge(
    tmp_path, scripted_llm, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    srv = scripted_llm()
    ok = [t for t in load_fixture("omni_runs") if t["outcome"] != "failure"]
    assert [t["trajectory_id"] for t in ok] == ["t_success"]
    lab = make_lab(tmp_path / "lab", extra=ok)
    for extra in (("--model", "m", "--base-url", srv.base_url), ("--rules",)):
        r = run("judge", str(lab.root), *extra, "--no-progress")
        assert r.exit_code == 0
        assert "0 selected, 0 already done (skipped), 0 judged" in r.stdout and "status: -" in r.stdout
        assert "nothing to judge: no trajectory matched the selection" in r.stdout
    assert srv.n_requests == 0 and lab.refresh().rows("judge_labels") == 0
    r = run(
        "judge", str(lab.root), "--model", "m", "--base-url", srv.base_url, "--only", "all", "--no-progress"
    )
    assert r.exit_code == 0 and "0 selected" in r.stdout  # `all` is everything not graded a success
    r = run(
        "judge",
        str(lab.root),
        "--model",
        "m",
        "--base-url",
        srv.base_url,
        "--only",
        "t_success",
        "--no-progress",
    )
    assert r.exit_code == 0 and "1 selected" in r.stdout and "labeled=1" in r.stdout and srv.n_requests == 1


@pytest.mark.parametrize(
    ("sig", "code"),
    [(signal.SIGINT, 130), (signal.SIGTERM, 128 + signal.SIGTERM)],
    ids=["ctrl-c", "sigterm"],
)
def test_a_run_stopped_mid_way_keeps_finished_labels_and_the_rerun_resumes(tmp_path, scripted_llm, sig, code):
    """The real command is stopped while requests are in flight, then run again. SIGINT is Ctrl-C;
    SIGTERM is `kill`, `timeout`, a scheduler or CI cancelling the job: both stop it the same way, the
    labels that finished are committed and reported, and a rerun asks only for the rest."""
    srv = scripted_llm(latency_s=0.6)
    lab = make_lab(tmp_path / "lab", "omni_runs")
    cmd = [sys.executable, "-m", "trajlab", "judge", str(lab.root), "--model", "m", "--base-url",
           srv.base_url, "--concurrency", "1", "--no-progress"]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRAJLAB_", "OPENAI_"))}
    proc = subprocess.Popen(
        cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 60
    while srv.n_requests < 2 and time.monotonic() < deadline:  # the first answer is in, the second in flight
        time.sleep(0.05)
    assert srv.n_requests >= 2, "the judge never reached the server"
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in out + err
    assert proc.returncode == code and "INTERRUPTED, rerun to resume" in out, (out, err)
    done = {t: x for t, x in rows(lab).items() if x["status"] == "labeled"}
    assert 1 <= len(done) <= 2 and set(rows(lab)) == set(done)  # finished labels kept, nothing half-written
    sent = srv.n_requests
    r = subprocess.run([*cmd, "--json"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert f'"skipped_done": {len(done)}' in r.stdout and f'"judged": {3 - len(done)}' in r.stdout
    final = rows(lab)
    assert set(final) == IDS and {x["status"] for x in final.values()} == {"labeled"}
    assert {t: final[t]["label_id"] for t in done} == {t: x["label_id"] for t, x in done.items()}
    assert lab.refresh().rows("judge_labels") == 3  # no duplicate labels
    assert srv.n_requests - sent <= 3 - len(done)  # nothing labeled was asked again
