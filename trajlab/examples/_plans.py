"""Abstract action plans for one run: the tool orchestration of a success, or of a planted failure.

A plan is a list of `Act`s (think, say, call, final) that the format writers serialize into Codex,
Claude Code or ATIF files. Failure plans mark their decisive act and evidence acts, which become the
ground truth that later stages (DAG candidates, judges, distillation) are checked against.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from ._tasks import Task

PATTERNS: dict[str, str] = {
    "probe_before_extract": "Probe the media with ffprobe before extracting frames or audio.",
    "transcribe_audio": "Transcribe the audio track with whisper instead of guessing what is said.",
    "dense_frame_sampling": "Sample frames across the whole video (fps filter), not a single frame.",
    "compute_in_python": "Do the arithmetic in a python one-liner and check it against the evidence.",
    "recover_missing_asr": "When whisper is missing, install openai-whisper with pip and rerun it.",
    "adhoc_cv2_script": "Ad-hoc python3 OpenCV scripts instead of ffmpeg (seen mostly in failures).",
}


# Which planted failure categories make sense per task domain, with sampling weights.
CATEGORY_WEIGHTS: dict[str, dict[str, float]] = {
    "video": {
        "video_perception": 0.35,
        "insufficient_exploration": 0.2,
        "knowledge_retrieval": 0.15,
        "reasoning_calculation": 0.15,
        "tool_infrastructure": 0.15,
    },
    "audio": {
        "audio_perception": 0.35,
        "insufficient_exploration": 0.25,
        "knowledge_retrieval": 0.05,
        "reasoning_calculation": 0.15,
        "tool_infrastructure": 0.2,
    },
    "image": {
        "insufficient_exploration": 0.25,
        "knowledge_retrieval": 0.15,
        "reasoning_calculation": 0.4,
        "tool_infrastructure": 0.2,
    },
    "mixed": {
        "audio_perception": 0.2,
        "video_perception": 0.25,
        "insufficient_exploration": 0.2,
        "knowledge_retrieval": 0.05,
        "reasoning_calculation": 0.15,
        "tool_infrastructure": 0.15,
    },
}
INFRA_VARIANTS: dict[str, list[str]] = {
    "video": ["timeout", "permission"],
    "audio": ["asr_missing"],
    "image": ["timeout", "permission"],
    "mixed": ["asr_missing"],
}


@dataclass
class Act:
    kind: str  # think | say | call | final
    text: str = ""
    tool: str = "bash"  # bash | view_image | web_search
    command: str = ""  # shell command, image path, or search query
    output: str = ""
    exit_code: int | None = 0
    duration: float = 1.0
    call_id: str = ""
    decisive: bool = False
    evidence: bool = False
    image_tokens: int = 0  # extra prompt tokens when raw media is fed to the model


@dataclass
class Plan:
    acts: list[Act]
    outcome: str  # success | failure
    category: str | None = None
    variant: str = "success"
    final_answer: str = ""
    patterns: list[str] = field(default_factory=list)


class _Builder:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.acts: list[Act] = []
        self.patterns: list[str] = []

    def _cid(self) -> str:
        return "".join(
            self.rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789") for _ in range(22)
        )

    def think(self, text: str) -> None:
        self.acts.append(Act("think", text=text))

    def say(self, text: str) -> Act:
        a = Act("say", text=text)
        self.acts.append(a)
        return a

    def call(
        self,
        command: str,
        output: str,
        code: int | None = 0,
        tool: str = "bash",
        dur: float | None = None,
        **kw: Any,
    ) -> Act:
        a = Act(
            "call",
            tool=tool,
            command=command,
            output=output,
            exit_code=code,
            duration=dur if dur is not None else round(self.rng.uniform(0.2, 4.0), 3),
            call_id=self._cid(),
            **kw,
        )
        self.acts.append(a)
        return a

    def final(self, answer: str, text: str | None = None, **kw: Any) -> Act:
        a = Act("final", text=text or f"The answer is {answer}.", **kw)
        self.acts.append(a)
        return a

    # -- building blocks ---------------------------------------------------------------------------

    def probe(self, media: str, duration: int, audio: bool = True, video: bool = True) -> Act:
        streams = []
        if video:
            streams.append(
                '{"index":0,"codec_type":"video","codec_name":"h264","width":1280,"height":720,"r_frame_rate":"30/1"}'
            )
        if audio:
            streams.append(
                f'{{"index":{len(streams)},"codec_type":"audio","codec_name":"aac",'
                '"sample_rate":"44100","channels":2}'
            )
        fmt = {"filename": media, "duration": f"{duration}.000000", "bit_rate": "1411200"}
        out = (
            '{"streams":[' + ",".join(streams) + '],"format":' + json.dumps(fmt, separators=(",", ":")) + "}"
        )
        self.patterns.append("probe_before_extract")
        return self.call(f"ffprobe -v error -print_format json -show_format -show_streams {media}", out)

    def frames_dense(self, media: str, duration: int, fps_every: int = 2) -> Act:
        n = duration // fps_every
        out = (
            f"Input #0, mov,mp4,m4a,3gp,3g2,mj2, from '{media}':\n  Duration: 00:{duration // 60:02d}:{duration % 60:02d}.00\n"
            f"Output #0, image2, to 'frames/%04d.png':\nframe= {n} fps=240 q=-0.0 Lsize=N/A time=00:{duration // 60:02d}:{duration % 60:02d}.00"
        )
        self.patterns.append("dense_frame_sampling")
        return self.call(
            f"mkdir -p frames && ffmpeg -hide_banner -i {media} -vf fps=1/{fps_every} frames/%04d.png", out
        )

    def frame_single(self, media: str, t: int) -> Act:
        out = f"Input #0, mov,mp4, from '{media}':\nOutput #0, image2, to 'frame.png':\nframe=    1 fps=0.0 q=-0.0 Lsize=N/A"
        return self.call(f"ffmpeg -hide_banner -ss {t} -i {media} -frames:v 1 frame.png", out)

    def extract_audio(self, media: str) -> Act:
        out = f"Input #0, mov,mp4, from '{media}':\nOutput #0, wav, to 'audio.wav':\nsize=   10336kB time=00:05:36.00 bitrate= 256.0kbits/s"
        return self.call(f"ffmpeg -hide_banner -y -i {media} -vn -ac 1 -ar 16000 audio.wav", out)

    def whisper(self, audio: str, lines: list[str], model: str = "small") -> Act:
        body = "\n".join(
            f"[{i * 7 // 60:02d}:{i * 7 % 60:02d}.000 --> {(i + 1) * 7 // 60:02d}:{(i + 1) * 7 % 60:02d}.000]  {ln}"
            for i, ln in enumerate(lines)
        )
        self.patterns.append("transcribe_audio")
        return self.call(
            f"whisper {audio} --model {model} --language en --output_format txt --output_dir transcripts",
            f"Detecting language using up to the first 30 seconds.\n{body}",
            dur=round(self.rng.uniform(20, 90), 2),
        )

    def grep_transcript(self, audio: str, lines: list[str], pattern: str = "thousand") -> Act:
        hits = [f"{i + 1}:{ln}" for i, ln in enumerate(lines) if pattern in ln]
        stem = audio.rsplit(".", 1)[0]
        return self.call(
            f"grep -n -i '{pattern}' transcripts/{stem}.txt", "\n".join(hits) or "", code=0 if hits else 1
        )

    def python(self, expr: str, value: str, script: bool = False) -> Act:
        self.patterns.append("compute_in_python")
        if script:
            cmd = f"cat > compute.py <<'EOF'\nvalues = {expr}\nprint(sum(values))\nEOF\npython3 compute.py"
            return self.call(cmd, value)
        return self.call(f'python3 -c "print({expr})"', value)


def _transcript_lines(nums: list[int], rng: random.Random) -> list[str]:
    fillers = [
        "Welcome back everyone, let's get into today's numbers.",
        "Before we start, a quick reminder about the schedule.",
        "That brings us to the end of the first segment.",
        "Thanks for listening, and see you next week.",
    ]
    lines = [fillers[0], fillers[1]]
    for k, n in enumerate(nums):
        lines.append(f"Item {k + 1} came in at {n} thousand dollars for the quarter.")
        if rng.random() < 0.5:
            lines.append(fillers[2])
    lines.append(fillers[3])
    return lines


def build_plan(task: Task, outcome: str, category: str | None, effort: str, rng: random.Random) -> Plan:
    """Actions of one run on `task`; for failures, `category` selects the planted cause."""
    b = _Builder(rng)
    f = task.facts
    media = task.media[0]
    extra_probe = {"low": 0, "medium": 1, "high": 2}.get(effort, 0)
    adhoc = rng.random() < (0.6 if outcome == "failure" else 0.12)
    b.think(f"I need to answer: {task.question} Let me inspect {media} with command-line tools first.")
    if adhoc and task.domain in ("video", "mixed"):
        b.patterns.append("adhoc_cv2_script")
        b.call(
            f"python3 -c \"import cv2; cap = cv2.VideoCapture('{media}'); print(cap.get(cv2.CAP_PROP_FRAME_COUNT))\"",
            "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nModuleNotFoundError: No module named 'cv2'",
            code=1,
        )
    elif adhoc:
        b.patterns.append("adhoc_cv2_script")
        b.call(
            "python3 inspect_media.py " + media,
            "python3: can't open file '/work/inspect_media.py': [Errno 2] No such file or directory",
            code=2,
        )
    variant = (
        "success"
        if outcome == "success"
        else {
            "audio_perception": "misheard",
            "video_perception": rng.choice(["misread", "sampling"]),
            "insufficient_exploration": "skipped",
            "knowledge_retrieval": "web",
            "reasoning_calculation": rng.choice(["script_bug", "mental_math"]),
            "tool_infrastructure": rng.choice(INFRA_VARIANTS[task.domain]),
        }[category or ""]
    )
    answer = task.answer
    dom = task.domain

    probes = dom in ("video", "mixed", "audio") and (
        outcome == "success" or variant not in ("skipped",) or rng.random() < 0.5
    )
    if probes and (outcome == "success" or rng.random() < 0.35):
        for _ in range(1 + (extra_probe if outcome == "success" else 0)):
            b.probe(media, int(f["duration"]), audio=True, video=dom != "audio")
    if dom == "video":
        code, count = f["code"], f["count"]
        if variant == "sampling":
            d = b.frame_single(media, int(f["duration"]) - 3)
            d.decisive = True
            b.call("tesseract frame.png - --psm 6", "EXIT\n\n", tool="bash")
            b.think("The frame does not show a code clearly; I'll estimate from what I saw.")
            answer = task.wrong_answers["sampling"]
        elif variant == "skipped":
            b.think(
                "The filename suggests a highlight reel; codes like this are usually shown at the start. I'll answer directly."
            )
            answer = task.wrong_answers["sampling"]
            b.final(answer, decisive=True)
            return Plan(b.acts, outcome, category, variant, answer, b.patterns)
        elif variant == "timeout":
            d = b.call(
                f"timeout 60 ffmpeg -i {media} -vf fps=30 frames/%06d.png",
                "ffmpeg: command timed out after 60s",
                code=124,
                dur=60.0,
            )
            d.decisive = True
            b.think("Frame extraction keeps timing out; I will answer from the video title.")
            answer = task.wrong_answers["sampling"]
        elif variant == "permission":
            d = b.call(
                f"ffmpeg -i {media} -vf fps=1 /data/frames/%04d.png",
                "/data/frames/%04d.png: Permission denied",
                code=1,
            )
            d.decisive = True
            answer = task.wrong_answers["sampling"]
        else:
            b.frames_dense(media, int(f["duration"]))
            frame_no = int(f["event_t"]) // 2
            ocr_code = code if variant != "misread" else task.wrong_answers["perception"].split("/")[0]
            ocr = b.call(
                f"tesseract frames/{frame_no:04d}.png - --psm 6", f"SITE ACCESS\n{ocr_code}\n", evidence=True
            )
            if variant == "misread":
                ocr.decisive = True
            view = b.call(
                f"frames/{frame_no:04d}.png",
                f"[image: frames/{frame_no:04d}.png]",
                tool="view_image",
                image_tokens=1100,
                evidence=True,
            )
            view.evidence = True
            b.call("ls frames | wc -l", str(int(f["duration"]) // 2))
            counts = ", ".join(f"frames/{frame_no + k * 7:04d}.png" for k in range(int(count)))
            b.say(f"The object is visible in {count} separate segments ({counts}).")
            if variant == "script_bug":
                d = b.python(
                    f"len([{', '.join(str(x) for x in range(int(count)))}]) + 1", str(int(count) + 1)
                )
                d.decisive = True
                answer = task.wrong_answers["calc"]
            elif variant == "mental_math":
                answer = task.wrong_answers["calc"]
            elif variant == "web":
                d = b.call(
                    f"{media.split('_')[0]} broadcast sign code",
                    f"Result: Broadcast codes for {media.split('_')[0]} are listed as {task.wrong_answers['perception'].split('/')[0]}.",
                    tool="web_search",
                )
                d.decisive = True
                answer = task.wrong_answers["perception"]
            elif variant == "misread":
                answer = task.wrong_answers["perception"]
    elif dom in ("audio", "mixed"):
        nums = f["numbers"] if dom == "audio" else [int(f["spoken"])]
        audio = "audio.wav"
        if dom == "mixed" or rng.random() < 0.5:
            b.extract_audio(media)
        else:
            audio = media
        if variant == "skipped":
            b.think(
                "Transcribing would take a while; the episode summary probably lists the amounts. I'll estimate."
            )
            answer = task.wrong_answers.get("knowledge") or task.wrong_answers["sampling"]
            b.final(answer, decisive=True)
            return Plan(b.acts, outcome, category, variant, answer, b.patterns)
        if variant == "asr_missing" or (outcome == "success" and rng.random() < 0.25):
            b.call(
                f"whisper {audio} --model small --output_dir transcripts",
                "bash: line 1: whisper: command not found",
                code=127,
            )
            if variant == "asr_missing":
                d = b.call(
                    "pip install -q openai-whisper",
                    "ERROR: Could not find a version that satisfies the requirement openai-whisper (from versions: none)\n"
                    "WARNING: Retrying after connection broken by 'NewConnectionError: Failed to establish a new connection: [Errno 101] Network is unreachable'",
                    code=1,
                    dur=30.0,
                )
                d.decisive = True
                b.think(
                    "I cannot install an ASR model here, so I'll infer the amounts from the episode length."
                )
                answer = task.wrong_answers.get("knowledge") or task.wrong_answers["sampling"]
                b.final(answer)
                return Plan(b.acts, outcome, category, variant, answer, b.patterns)
            b.call(
                "pip install -q openai-whisper",
                "Successfully installed openai-whisper-20250625 tiktoken-0.9.0",
                dur=25.0,
            )
            b.patterns.append("recover_missing_asr")
        if dom == "audio":
            heard = f["misheard"] if variant == "misheard" else nums
            lines = _transcript_lines(list(heard), rng)
            w = b.whisper(audio, lines, model="tiny" if variant == "misheard" else "small")
            w.evidence = True
            if variant == "misheard":
                w.decisive = True
            g = b.grep_transcript(audio, lines)
            g.evidence = True
            vals = list(heard)
            if variant == "script_bug":
                d = b.python(f"{vals}[:2]", str(sum(vals[:2])), script=True)
                d.decisive = True
                answer = str(sum(vals[:2]))
            elif variant == "mental_math":
                answer = task.wrong_answers["calc"]
                # the slip is made in this message: the final answer only repeats it
                b.say(f"Adding them up: {' + '.join(map(str, vals))} = {answer}.").decisive = True
            elif variant == "web":
                d = b.call(
                    f"{media.split('_')[0]} quarterly amounts",
                    f"Result: the three segments reported {task.wrong_answers['knowledge']} thousand in total.",
                    tool="web_search",
                )
                d.decisive = True
                answer = task.wrong_answers["knowledge"]
            else:
                b.python(" + ".join(map(str, vals)), str(sum(vals)))
                answer = str(sum(vals)) if variant != "misheard" else task.wrong_answers["perception"]
        else:  # mixed: video branch (slide) + audio branch (spoken) merge in python
            slide, spoken = int(f["slide"]), int(f["spoken"])
            heard_n = spoken + 10 if variant == "misheard" else spoken
            lines = [
                "Here is the next slide.",
                f"The number I want you to remember is {heard_n} thousand.",
                "Let's move on.",
            ]
            w = b.whisper(audio, lines, model="tiny" if variant == "misheard" else "small")
            w.evidence = True
            if variant == "misheard":
                w.decisive = True
            b.grep_transcript(audio, lines).evidence = True
            if variant == "sampling":
                d = b.frame_single(media, 1)
                d.decisive = True
                seen = slide if rng.random() < 0.2 else None
                b.call("tesseract frame.png - --psm 6", "INTRODUCTION\n" if seen is None else f"{seen}\n")
                answer = task.wrong_answers["sampling"]
            else:
                b.frames_dense(media, int(f["duration"]), fps_every=5)
                frame_no = int(f["event_t"]) // 5
                ocr = b.call(
                    f"tesseract frames/{frame_no:04d}.png - --psm 6", f"KEY FIGURE\n{slide}\n", evidence=True
                )
                if variant == "misread":
                    ocr.output = f"KEY FIGURE\n{slide + 1}\n"
                    ocr.decisive = True
                    answer = str((slide + 1) * spoken)
                elif variant == "script_bug":
                    d = b.python(f"{slide} + {heard_n}", str(slide + heard_n))
                    d.decisive = True
                    answer = str(slide + heard_n)
                elif variant == "mental_math":
                    answer = task.wrong_answers["calc"]
                elif variant == "web":
                    d = b.call(
                        "lecture slide key figure value",
                        f"Result: the key figure in this lecture series is {slide * 2}.",
                        tool="web_search",
                    )
                    d.decisive = True
                    answer = str(slide * 2 * heard_n)
                else:
                    b.python(f"{slide} * {heard_n}", str(slide * heard_n))
                    answer = str(slide * heard_n)
    elif dom == "image":
        items, tip = f["items"], f["tip"]
        if variant == "timeout":
            d = b.call(
                f"timeout 30 tesseract {media} - --psm 4",
                "tesseract: command timed out after 30s",
                code=124,
                dur=30.0,
            )
            d.decisive = True
            answer = task.wrong_answers["knowledge"]
            b.final(answer)
            return Plan(b.acts, outcome, category, variant, answer, b.patterns)
        if variant in ("asr_missing", "permission"):
            d = b.call(f"tesseract {media} -", "bash: line 1: tesseract: command not found", code=127)
            b.call(
                "apt-get install -y tesseract-ocr",
                "E: Could not open lock file /var/lib/dpkg/lock-frontend - open (13: Permission denied)",
                code=100,
            )
            d.decisive = True
            answer = task.wrong_answers["knowledge"]
            b.final(answer)
            return Plan(b.acts, outcome, category, variant, answer, b.patterns)
        lines = [f"ITEM {k + 1} ......... {v:.2f}" for k, v in enumerate(items)]
        if variant == "skipped":
            b.call(f"{media}", f"[image: {media}]", tool="view_image", image_tokens=1500)
            answer = task.wrong_answers["knowledge"]
            b.final(answer, decisive=True)
            return Plan(b.acts, outcome, category, variant, answer, b.patterns)
        ocr = b.call(
            f"tesseract {media} - --psm 4", "GUEST CHECK\n" + "\n".join(lines) + "\nTHANK YOU", evidence=True
        )
        if variant == "web":
            d = b.call(
                f"standard restaurant tip calculation {tip} percent of what",
                "Result: tips are usually calculated on the pre-discount subtotal minus the first item.",
                tool="web_search",
            )
            d.decisive = True
            answer = task.wrong_answers["perception"]
        elif variant == "script_bug":
            d = b.python(f"round(sum({items}) * (1 + {tip}/1000), 2)", task.wrong_answers["calc"])
            d.decisive = True
            answer = task.wrong_answers["calc"]
        elif variant == "mental_math":
            answer = task.wrong_answers["calc"]
            b.say(f"Subtotal is about {sum(items):.2f}; with the tip that is {answer}.").decisive = True
        else:
            b.python(f"round(sum({items}) * (1 + {tip}/100), 2)", f"{f['total']:.2f}")
            answer = task.answer if outcome == "success" else task.wrong_answers["calc"]
        ocr.evidence = True
    if outcome == "success":
        answer = task.answer
    final = b.final(answer)
    if variant == "mental_math" and not any(a.decisive for a in b.acts):
        final.decisive = True  # no message worked the number out: the answer itself is the slip
    return Plan(b.acts, outcome, category, variant, answer, sorted(set(b.patterns)))
