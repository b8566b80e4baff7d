"""Hand-written omni-modal runs: branch/merge structure, answer path, and decisive-step ranking."""

from __future__ import annotations

import networkx as nx
from dagfix import Run, edge, edge_set

FFPROBE_OUT = '{"streams":[{"codec_type":"video","width":1280}],"format":{"duration":"120.000000"}}'
FFMPEG_FRAMES_OUT = "Output #0, image2, to 'frames/%03d.png':\nframe=  120 fps=240 q=-0.0 Lsize=N/A"
TRANSCRIPT = (
    "[00:00.000 --> 00:07.000]  Welcome back, let's get into today's numbers.\n"
    "[00:07.000 --> 00:14.000]  Item 1 came in at 120 thousand dollars.\n"
    "[00:14.000 --> 00:21.000]  Item 2 came in at 340 thousand dollars.\n"
    "[00:21.000 --> 00:28.000]  Item 3 came in at 55 thousand dollars."
)
GREP_OUT = (
    "2:Item 1 came in at 120 thousand dollars.\n"
    "3:Item 2 came in at 340 thousand dollars.\n"
    "4:Item 3 came in at 55 thousand dollars."
)


def video_run() -> Run:
    r = Run(domain="video")
    r.user("What code is shown on the sign in clip.mp4? Answer with the code.")  # 0
    r.think("Probe the video, extract frames, read the sign.")  # 1
    r.bash("ffprobe -v error -print_format json -show_format -show_streams clip.mp4", FFPROBE_OUT)  # 2
    r.bash(
        "mkdir -p frames && ffmpeg -hide_banner -i clip.mp4 -vf fps=1 frames/%03d.png", FFMPEG_FRAMES_OUT
    )  # 3
    r.bash("ls frames | head -3", "001.png\n002.png\n003.png")  # 4
    r.call("view_image", {"path": "frames/042.png"}, "[image: frames/042.png]")  # 5
    r.bash("tesseract frames/042.png - --psm 6", "SITE ACCESS\nORBIT-42\n")  # 6
    r.say("The code on the sign is ORBIT-42.")  # 7
    return r


def test_ffprobe_ffmpeg_frames_image_read() -> None:
    d = video_run().dag()
    assert edge(d, 3, 5, "data")["rule"] == "ffmpeg-output"
    assert edge(d, 3, 5, "data")["artifact"] == "frames/042.png"
    assert edge(d, 3, 6, "data")["rule"] == "ffmpeg-output"
    assert edge(d, 3, 4, "data")["rule"] == "dir-contents"
    assert edge(d, 0, 2, "data")["rule"] == "revealed-path"  # the task named the video
    assert edge(d, 0, 3, "data")["artifact"] == "clip.mp4"
    a = edge(d, 6, 7, "answer")
    assert (a["rule"], a["artifact"]) == ("answer-value", "value:ORBIT-42")
    nodes = {n["node_id"]: n for n in d.nodes}
    assert [nodes[i]["modality"] for i in (2, 3, 5, 6)] == ["video", "video", "image", "image"]
    assert {nodes[i]["branch"] for i in (2, 3, 5, 6)} == {"video#1"}  # frames continue the video branch
    m = d.metrics
    assert m["branches"] == ["video#1"]
    assert m["answer_branches"] == ["video#1"]
    assert m["answer_step"] == 7
    assert m["required_modalities"] == ["video"]
    on_path = {n["node_id"] for n in d.nodes if n["on_answer_path"]}
    assert on_path == {0, 3, 6, 7}
    assert {n["node_id"] for n in d.nodes if n["is_dead_end"]} == {2, 4, 5}
    assert m["n_dead_ends"] == 3
    assert m["answer_path_share"] == 2 / 5
    assert m["longest_path"] == 4  # 0 -> 3 -> 6 -> 7
    assert m["n_errors"] == 0 and m["first_error_step"] is None
    # a successful run: the top candidate is where the answer came from
    assert d.candidates[0]["step_index"] == 6
    assert d.candidates[0]["signal"] == "answer_source"
    assert nx.is_directed_acyclic_graph(d.graph)


def audio_run(answer: str = "The total is 515 thousand dollars.") -> Run:
    r = Run(domain="audio")
    r.user("In podcast_ep.mp3 the speaker lists three amounts in thousands of dollars. What is their total?")
    r.bash(
        "ffmpeg -hide_banner -y -i podcast_ep.mp3 -ac 1 -ar 16000 audio.wav",
        "Output #0, wav, to 'audio.wav':",
    )
    r.bash("whisper audio.wav --model small --output_format txt --output_dir transcripts", TRANSCRIPT)  # 2
    r.bash("grep -n -i 'thousand' transcripts/audio.txt", GREP_OUT)  # 3
    r.bash('python3 -c "print(120 + 340 + 55)"', "515")  # 4
    r.say(answer)  # 5
    return r


def test_whisper_transcript_grep_python_answer() -> None:
    d = audio_run().dag()
    assert (edge(d, 1, 2, "data")["rule"], edge(d, 1, 2, "data")["artifact"]) == (
        "ffmpeg-output",
        "audio.wav",
    )
    e = edge(d, 2, 3, "data")
    assert (e["rule"], e["artifact"]) == ("whisper-output", "transcripts/audio.txt")
    assert edge(d, 3, 4, "data")["rule"] == "value"  # the values grep printed, typed into python
    assert edge(d, 3, 4, "data")["artifact"] in {"value:120", "value:340", "value:55"}
    assert (2, 4, "data") not in edge_set(d)  # the latest printer of a value is the source
    a = edge(d, 4, 5, "answer")
    assert (a["rule"], a["artifact"]) == ("answer-value", "value:515")
    nodes = {n["node_id"]: n for n in d.nodes}
    assert [nodes[i]["branch"] for i in (1, 2, 3, 4)] == ["audio#1"] * 4  # grep and python carry the branch
    m = d.metrics
    assert m["branches"] == ["audio#1"] and m["answer_branches"] == ["audio#1"]
    assert m["n_merges"] == 0
    assert {n["node_id"] for n in d.nodes if n["on_answer_path"]} == {0, 1, 2, 3, 4, 5}
    assert m["answer_path_share"] == 1.0
    assert m["longest_path"] == 6
    assert m["n_dead_ends"] == 0
    # a successful run: the computation that printed the answer, then the media steps (latest first)
    assert [(c["step_index"], c["signal"], c["score"]) for c in d.candidates] == [
        (4, "answer_source", 0.7),
        (2, "perception_step", 0.62),
        (1, "perception_step", 0.6),
    ]


def test_audio_tool_failure_ranks_the_failed_steps() -> None:
    r = Run(domain="audio")
    r.user("In podcast_ep.mp3 the speaker lists three amounts. What is their total?")  # 0
    r.bash(
        "whisper podcast_ep.mp3 --model small --output_dir transcripts",
        "bash: whisper: command not found",
        127,
    )
    r.bash(
        "pip install -q openai-whisper", "ERROR: Could not find a version that satisfies the requirement", 1
    )
    r.think("I cannot transcribe; I'll estimate from the episode length.")  # 3
    r.say("The total is 600 thousand dollars.")  # 4
    d = r.dag()
    ranked = [(c["step_index"], c["signal"]) for c in d.candidates]
    assert ranked[:3] == [
        (1, "unrecovered_error"),
        (2, "last_unrecovered_error"),
        (4, "answer_without_modality"),
    ]
    assert d.metrics["n_unrecovered_errors"] == 2
    assert d.metrics["first_error_step"] == 1
    assert d.metrics["n_retries"] == 0  # pip is a fix attempt, not a retry of whisper
    top = d.candidates[0]
    assert set(top) == {"step_index", "reason", "signal", "score"} and top["score"] == 0.9
    answer = next(c for c in d.candidates if c["step_index"] == 4)
    assert "answer_unsupported" in answer["reason"]  # also flagged, under the stronger signal


def test_retry_after_fix_is_a_recovery() -> None:
    r = Run(domain="audio")
    r.user("Transcribe podcast_ep.mp3 and tell me the first amount.")
    r.bash("whisper podcast_ep.mp3 --output_dir tr", "bash: whisper: command not found", 127)  # 1
    r.bash("pip install -q openai-whisper", "Successfully installed openai-whisper")  # 2
    r.bash("whisper podcast_ep.mp3 --output_dir tr", TRANSCRIPT)  # 3
    r.say("The first amount is 120 thousand dollars.")  # 4
    d = r.dag()
    e = edge(d, 1, 3, "retry")
    assert (e["rule"], e["artifact"]) == ("retry-same-tool", "podcast_ep.mp3")
    m = d.metrics
    assert (m["n_retries"], m["n_recoveries"], m["n_unrecovered_errors"]) == (1, 1, 0)
    assert {n["node_id"]: n["retry_of"] for n in d.nodes}[3] == 1
    assert edge(d, 3, 4, "answer")["artifact"] == "value:120"
    assert d.candidates[-1]["signal"] == "first_error" and d.candidates[-1]["step_index"] == 1


def mixed_run(with_audio: bool = True) -> Run:
    r = Run(domain="mixed")
    r.user(
        "In lecture.mp4 a slide shows a number and the narrator says another right after. What is their product?"
    )
    if with_audio:
        r.bash("ffmpeg -hide_banner -y -i lecture.mp4 -vn -ac 1 -ar 16000 audio.wav", "Output #0, wav")  # 1
        r.bash(
            "whisper audio.wav --model small --output_format txt --output_dir tr",
            "[00:07.000 --> 00:14.000]  The number I want you to remember is 23 thousand.",
        )  # 2
    r.bash("mkdir -p frames && ffmpeg -hide_banner -i lecture.mp4 -vf fps=1/5 frames/%04d.png", "frame= 40")
    r.bash("tesseract frames/0012.png - --psm 6", "KEY FIGURE\n17\n")
    if with_audio:
        r.bash('python3 -c "print(17 * 23)"', "391")
        r.say("The product is 391.")
    else:
        r.say("The product is 289.")
    return r


def test_image_and_audio_branches_merge_in_a_computation() -> None:
    d = mixed_run().dag()
    m = d.metrics
    assert m["required_modalities"] == ["audio", "video"]
    assert m["branches"] == ["audio#1", "video#1"]
    assert m["merge_nodes"] == [5] and m["n_merges"] == 1
    assert m["answer_branches"] == ["audio#1", "video#1"]
    nodes = {n["node_id"]: n for n in d.nodes}
    assert [nodes[i]["branch"] for i in (1, 2, 3, 4, 5)] == ["audio#1", "audio#1", "video#1", "video#1", None]
    assert edge(d, 2, 5, "data")["artifact"] == "value:23"
    assert edge(d, 4, 5, "data")["artifact"] == "value:17"
    assert edge(d, 5, 6, "answer")["artifact"] == "value:391"
    assert m["modalities"] == ["audio", "video", "image", "compute"]


def test_missing_audio_branch_is_a_null_candidate() -> None:
    d = mixed_run(with_audio=False).dag()
    top = d.candidates[:2]
    assert (top[0]["step_index"], top[0]["signal"]) == (3, "answer_without_modality")
    assert (top[1]["step_index"], top[1]["signal"]) == (None, "missing_modality_branch")
    assert "audio" in top[1]["reason"]
    assert d.metrics["branches"] == ["video#1"]


def test_mental_arithmetic_on_printed_values_is_supported() -> None:
    r = mixed_run()
    r.steps = r.steps[:5]
    r.say("The product is 391.")  # no python: the answer is derived from two printed values
    d = r.dag()
    rules = {(e["src"], e["rule"]) for e in d.edges if e["dst"] == 5 and e["type"] == "answer"}
    assert {(2, "answer-derived"), (4, "answer-derived")} <= rules
    assert all(c["signal"] != "answer_unsupported" for c in d.candidates)
    wrong = mixed_run()
    wrong.steps = wrong.steps[:5]
    wrong.say("The product is 401.")
    d2 = wrong.dag()
    top = d2.candidates[0]
    assert (top["step_index"], top["signal"]) == (5, "answer_without_modality")  # neither branch reached it
    assert "also answer_unsupported" in top["reason"]
    assert not [e for e in d2.edges if e["dst"] == 5 and e["type"] == "answer"]


def test_web_answer_for_a_media_task_is_flagged() -> None:
    r = Run(domain="image")
    r.user("receipt.png is a photo of a bill. What is the total including a 10% tip?")
    r.bash("tesseract receipt.png - --psm 4", "ITEM 1 .... 12.50\nITEM 2 .... 30.00")  # 1
    r.call("WebSearch", {"query": "restaurant tip calculation"}, "Result: the usual total is 48.75.")  # 2
    r.say("The total is 48.75.")  # 3
    d = r.dag()
    assert edge(d, 2, 3, "answer")["artifact"] == "value:48.75"
    signals = {c["step_index"]: c["signal"] for c in d.candidates}
    assert signals[1] == "modality_branch_unused"
    # the answer lacks the image evidence and stands on the search (DAG_VERSION 35; before, the search
    # was `external_knowledge_on_answer_path`, ranked below the answer)
    assert signals[2] == "knowledge_instead_of_evidence" and d.candidates[0]["step_index"] == 2


def test_single_frame_sampling() -> None:
    r = Run(domain="video")
    r.user("How many times does the drone appear in clip.mp4?")
    r.bash("ffmpeg -hide_banner -ss 30 -i clip.mp4 -frames:v 1 frame.png", "frame=    1")  # 1
    r.bash("tesseract frame.png - --psm 6", "EXIT")  # 2
    r.say("It appears UNKNOWN times.")  # 3
    d = r.dag()
    assert (d.candidates[0]["step_index"], d.candidates[0]["signal"]) == (1, "single_frame_sampling")
    assert edge(d, 1, 2, "data")["artifact"] == "frame.png"


def test_a_web_answer_in_place_of_the_media_evidence_ranks_the_web_step_first() -> None:
    """An audio task answered from a web search, never transcribed: the search is where the run left the
    evidence for outside knowledge, ranked above the answer that lacks the audio."""
    r = Run(domain="audio")
    r.user("In earnings_call.mp3 the CFO lists three segment amounts. What is their total, in thousands?")
    r.bash("ffprobe -v error -show_format earnings_call.mp3", "duration=312.4")  # 1
    r.call("WebSearch", {"query": "earnings call segment amounts"}, "Result: segments reported 701 thousand.")
    r.say("The total is 701 thousand.")  # 3
    d = r.dag()
    top, second = d.candidates[0], d.candidates[1]
    assert (top["step_index"], top["signal"]) == (2, "knowledge_instead_of_evidence")
    assert (
        "audio evidence was needed" in top["reason"]
        and "also external_knowledge_on_answer_path" in top["reason"]
    )
    assert (second["step_index"], second["signal"]) == (3, "answer_without_modality")
    # a search whose results the runner did not record (a hosted web search) is where the answer may
    # come from: the same rank
    hidden = Run(domain="audio")
    hidden.user(
        "In earnings_call.mp3 the CFO lists three segment amounts. What is their total, in thousands?"
    )
    hidden.bash("ffprobe -v error -show_format earnings_call.mp3", "duration=312.4")  # 1
    hidden.call("web_search", {"query": "earnings call segment amounts"}, None, exit_code=None)  # 2
    hidden.say("The total is 701 thousand.")  # 3
    top = hidden.dag().candidates[0]
    assert (top["step_index"], top["signal"]) == (2, "knowledge_instead_of_evidence")
    # with the audio transcribed, the answer lacks nothing: no such candidate
    fine = mixed_run()
    assert all(c["signal"] != "knowledge_instead_of_evidence" for c in fine.dag().candidates)


def test_an_answer_source_whose_literal_arithmetic_checks_out_says_so() -> None:
    d = mixed_run().dag()  # python3 -c "print(17 * 23)" printed 391
    source = next(c for c in d.candidates if c["signal"] == "answer_source")
    assert "arithmetic over the literals it was given checks out" in source["reason"]
    wrong = mixed_run()
    wrong.steps[5]["output"] = "401"  # not what 17 * 23 gives
    wrong.say("The product is 401.")
    del wrong.steps[6]
    sources = [c for c in wrong.dag().candidates if c["signal"] == "answer_source"]
    assert sources and all("checks out" not in c["reason"] for c in sources)
