from __future__ import annotations

import pytest

from trajlab.analysis import capability_usage, run_sql

# (normalized tool, programs, modality, command) exactly as stored -> the rule that must fire
STORED = [
    ("web_search", [], "web", None, "external:web"),
    ("pip", ["pip"], "web", "pip install x", "external:web"),
    ("python", ["cd", "uv", "python"], "compute", "cd a && uv add numpy && python x.py", "external:install"),
    ("apt", ["apt"], "compute", "apt-get update", "external:install"),
    ("npm", ["npm"], "compute", "npm test", "compute:other"),
    ("git", ["git"], "file", "git clone https://x/y", "external:download"),
    ("git", ["git"], "file", "git status", "file:tool"),
    ("ls", ["ls", "wget"], "file", "ls && wget http://x/a", "external:download"),
    ("todo", [], "compute", None, "other:agent"),
    ("ls", ["ls", "python"], "file", "ls && python a.py", "compute:code"),
    ("ffmpeg", ["ffmpeg"], "video", "ffmpeg -i a.mp4 f%03d.png", "compute:code"),
    ("mystery_audio", [], "audio", None, "compute:code"),
    ("image_read", [], "image", None, "file:tool"),
    # a file tool's read of an audio file (Magentic-One's FileSurfer on an .mp3) handles a file
    ("read", [], "audio", None, "file:tool"),
    ("plan", [], "compute", None, "other:agent"),
    ("ask_user", [], "compute", None, "other:agent"),
    (
        "submit",
        ["echo", "git"],
        "compute",
        "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff",
        "other:agent",
    ),
    ("read", [], "file", None, "file:tool"),
    ("cat", ["cat"], "file", "cat a.txt", "file:tool"),
    ("docker", ["docker"], "compute", "docker ps", "compute:other"),
    (None, [], None, None, "compute:other"),
]


def test_capability_rules_fire_in_order(builder):
    builder.traj("t1")
    for tool, programs, modality, command, _ in STORED:
        builder.step("t1", "tool_call", tool=tool, programs=programs, modality=modality, command=command)
    got = run_sql(builder.build(), "step_capability").sort_by("step_index").to_pylist()
    assert [g["rule"] for g in got] == [s[-1] for s in STORED]
    assert [g["capability"] for g in got] == [s[-1].split(":")[0] for s in STORED]


# (runner tool, arguments, capability): normalized by the real normalizer, as ingest stores them
RULES = [
    ("Bash", {"command": "pip install openai-whisper"}, "external"),
    ("exec_command", {"cmd": "curl -sL https://example.org/a.mp4 -o a.mp4"}, "external"),
    ("web_search", {"query": "population of Lyon"}, "external"),
    ("WebFetch", {"url": "https://example.org"}, "external"),
    ("Bash", {"command": "python -c 'import requests; requests.get(u)'"}, "external"),
    ("Bash", {"command": "cd /app && pip install -r requirements.txt && python run.py"}, "external"),
    ("Bash", {"command": "git clone https://github.com/org/repo"}, "external"),
    ("Bash", {"command": "cd repo && git pull"}, "external"),
    ("TodoWrite", {"todos": []}, "other"),
    ("Task", {"prompt": "look around"}, "other"),
    ("Bash", {"command": "python3 solve.py"}, "compute"),
    ("Bash", {"command": "cat > s.py <<EOF\nprint(1)\nEOF\npython s.py"}, "compute"),
    ("Bash", {"command": "wc -l a.txt && python3 -m pytest"}, "compute"),
    ("Bash", {"command": "ffmpeg -i a.mp4 -vn a.wav"}, "compute"),
    ("Bash", {"command": "ffprobe -v error -show_streams a.mp4"}, "compute"),
    ("Bash", {"command": "whisper a.wav --model tiny"}, "compute"),
    ("Bash", {"command": "tesseract page.png out"}, "compute"),
    ("calculator", {"expression": "2+2"}, "compute"),
    ("Bash", {"command": "bc <<< 2+2"}, "compute"),
    ("Read", {"file_path": "/src/main.py"}, "file"),
    ("Write", {"file_path": "notes.md", "content": "x"}, "file"),
    ("Edit", {"file_path": "main.py", "old_string": "a", "new_string": "b"}, "file"),
    ("apply_patch", "*** Begin Patch\n*** End Patch", "file"),
    ("Glob", {"pattern": "**/*.py"}, "file"),
    ("view_image", {"path": "frame.png"}, "file"),
    ("Bash", {"command": "ls -la /data"}, "file"),
    ("Bash", {"command": "grep -rn foo src/"}, "file"),
    ("Bash", {"command": "sed -i s/a/b/ f.txt"}, "file"),
    ("Bash", {"command": "git status"}, "file"),
    ("Bash", {"command": "npm run lint"}, "compute"),
    ("Bash", {"command": "docker ps"}, "compute"),
]


def test_capability_of_real_commands(builder):
    builder.traj("t1")
    for tool_name, args, _ in RULES:
        builder.runner_call("t1", tool_name, args)
    lab = builder.build()
    got = run_sql(lab, "step_capability").sort_by("step_index").to_pylist()
    assert len(got) == len(RULES)
    mismatches = [
        (tool_name, args, cap, g["capability"], g["rule"])
        for (tool_name, args, cap), g in zip(RULES, got)
        if g["capability"] != cap
    ]
    assert mismatches == []


def test_usage_rates_per_model_and_average_turns(builder):
    builder.traj("a1", model="A", domain="video").traj("a2", model="A", domain="audio")
    builder.shell("a1", "cat notes.txt")
    builder.shell("a1", "python3 solve.py")
    builder.shell("a1", "pip install yt-dlp")
    builder.step("a2")  # a2 never calls a tool: it still counts as a trajectory with 0 turns
    builder.traj("b1", model="B", domain="video")
    builder.shell("b1", "ls")
    builder.shell("b1", "ls -la")
    builder.shell("b1", "wget https://example.org/x.mp4")
    res = capability_usage(builder.build())
    assert res.missing == []
    rows = {(r["model"], r["capability"]): r for r in res.table.to_pylist()}
    assert [(r["model"], r["capability"]) for r in res.table.to_pylist()] == [
        ("A", "external"), ("A", "file"), ("A", "compute"), ("A", "other"),
        ("B", "external"), ("B", "file"), ("B", "compute"), ("B", "other"),
    ]  # fmt: skip
    a_ext = rows[("A", "external")]
    assert (a_ext["n_traj"], a_ext["avg_turns"], a_ext["n_calls"]) == (2, 1.5, 1)
    assert a_ext["call_share"] == pytest.approx(1 / 3)
    assert a_ext["usage_rate"] == pytest.approx(0.5)
    assert a_ext["calls_per_traj"] == pytest.approx(0.5)
    assert a_ext["traj_share_when_used"] == pytest.approx(1 / 3)
    assert rows[("A", "other")]["n_calls"] == 0 and rows[("A", "other")]["usage_rate"] == 0
    b_file = rows[("B", "file")]
    assert (b_file["avg_turns"], b_file["n_calls"]) == (3.0, 2)
    assert b_file["call_share"] == pytest.approx(2 / 3) and b_file["usage_rate"] == 1.0
    assert rows[("B", "external")]["call_share"] == pytest.approx(1 / 3)
    # shares over capabilities add up to 1 per model
    for m in ("A", "B"):
        assert sum(
            rows[(m, c)]["call_share"] for c in ("external", "file", "compute", "other")
        ) == pytest.approx(1)

    by_domain = capability_usage(builder.root, by=("model", "domain")).table.to_pylist()
    video_a = {r["capability"]: r for r in by_domain if r["model"] == "A" and r["domain"] == "video"}
    assert video_a["compute"]["avg_turns"] == 3 and video_a["compute"]["usage_rate"] == 1
    assert {(r["model"], r["domain"]) for r in by_domain} == {("A", "video"), ("A", "audio"), ("B", "video")}


def test_no_tool_calls_is_reported_not_divided(builder):
    builder.traj("a", model="A")
    builder.step("a")
    res = capability_usage(builder.build())
    assert res.missing == ["no tool calls"]
    assert res.num_rows == 0 and "call_share" in res.columns
