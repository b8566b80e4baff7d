"""A seeded catalogue of omni-modal tasks (video, audio, image, and video+audio) with gold answers.

Each task carries the media it is about and the facts hidden in that media (text on frames, numbers
spoken in the audio, a total on a receipt), so the action plans can produce realistic tool outputs
(ffprobe metadata, OCR text, whisper transcripts) from which the right or wrong answer follows.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TypedDict

DOMAINS = ("video", "audio", "image", "mixed")
BENCHMARK = "omni-synth"

_SUBJECTS_VIDEO = [
    "soccer_highlights",
    "dashcam_drive",
    "cooking_demo",
    "lab_experiment",
    "city_timelapse",
    "lecture_clip",
]
_SUBJECTS_AUDIO = ["podcast_ep", "earnings_call", "city_council", "radio_drama", "interview", "museum_tour"]
_SUBJECTS_IMAGE = ["receipt", "whiteboard", "street_sign", "invoice", "chart", "menu_board"]
_WORDS = ["orbit", "maple", "harbor", "violet", "quartz", "ember", "lumen", "cedar", "nova", "delta"]


class Facts(TypedDict, total=False):
    """What a task's media "contains"; which keys are set depends on the domain."""

    duration: int  # seconds (video, audio, mixed)
    event_t: int  # second at which the sign or slide shows (video, mixed)
    fps: int  # (video, mixed)
    code: str  # the sign's code (video)
    count: int  # appearances of the object (video)
    numbers: list[int]  # the spoken amounts (audio)
    misheard: list[int]  # the same, one of them misheard (audio)
    items: list[float]  # the bill's items (image)
    tip: int  # tip percent (image)
    total: float  # bill total with the tip (image)
    slide: int  # the number on the slide (mixed)
    spoken: int  # the number the narrator says (mixed)


@dataclass
class Task:
    task_id: str
    domain: str
    difficulty: int  # 1 (easy) .. 3 (hard)
    split: str  # train | calibration | eval
    question: str
    answer: str
    media: list[str]
    facts: Facts = field(default_factory=Facts)  # what the media "contains"
    wrong_answers: dict[str, str] = field(default_factory=dict)  # plausible wrong answer per failure kind


def _split(i: int, n: int) -> str:
    r = i / max(n, 1)
    return "train" if r < 0.6 else ("calibration" if r < 0.8 else "eval")


def make_tasks(n: int, seed: int) -> list[Task]:
    rng = random.Random(seed)
    tasks: list[Task] = []
    for i in range(n):
        facts: Facts
        domain = DOMAINS[i % len(DOMAINS)]
        difficulty = 1 + (i // len(DOMAINS)) % 3
        tid = f"omni-{domain[0]}-{i:04d}"
        split = _split(i, n)
        if domain == "video":
            subject = rng.choice(_SUBJECTS_VIDEO)
            media = [f"{subject}_{i:03d}.mp4"]
            duration = rng.randint(45, 600)
            event_t = rng.randint(5, duration - 5)
            code = f"{rng.choice(_WORDS).upper()}-{rng.randint(10, 99)}"
            count = rng.randint(2, 9)
            q = (
                f"In {media[0]}, a sign with a code appears once, around the middle of the clip. "
                f"What is the code, and how many times does the {rng.choice(['red car', 'player in blue', 'drone'])} "
                f"appear on screen? Answer as CODE/COUNT."
            )
            answer = f"{code}/{count}"
            facts = {"duration": duration, "event_t": event_t, "code": code, "count": count, "fps": 30}
            wrong = {
                "perception": f"{code[:-1]}{(int(code[-1]) + 3) % 10}/{count}",
                "sampling": f"UNKNOWN/{max(count - 2, 1)}",
                "calc": f"{code}/{count + 1}",
            }
        elif domain == "audio":
            subject = rng.choice(_SUBJECTS_AUDIO)
            media = [f"{subject}_{i:03d}.mp3"]
            duration = rng.randint(120, 1800)
            nums = [rng.randint(12, 480) for _ in range(3)]
            q = (
                f"In {media[0]}, the speaker lists three amounts in thousands of dollars. "
                f"What is their total, in thousands?"
            )
            answer = str(sum(nums))
            misheard = list(nums)
            misheard[1] = nums[1] + (40 if nums[1] < 440 else -40)
            facts = {"duration": duration, "numbers": nums, "misheard": misheard}
            wrong = {
                "perception": str(sum(misheard)),
                "calc": str(sum(nums) + rng.choice([-10, 10, 100])),
                "knowledge": str(nums[0] * 3),
            }
        elif domain == "image":
            subject = rng.choice(_SUBJECTS_IMAGE)
            media = [f"{subject}_{i:03d}.png"]
            items = [round(rng.uniform(2, 60), 2) for _ in range(rng.randint(3, 5))]
            tip = rng.choice([10, 15, 18, 20])
            total = round(sum(items) * (1 + tip / 100), 2)
            q = f"{media[0]} is a photo of a bill. What is the total including a {tip}% tip? Give two decimals."
            answer = f"{total:.2f}"
            facts = {"items": items, "tip": tip, "total": total}
            wrong = {
                "perception": f"{round((sum(items) - items[0] + items[0] * 10) * (1 + tip / 100), 2):.2f}",
                "calc": f"{round(sum(items) * (1 + tip / 1000), 2):.2f}",
                "knowledge": f"{round(sum(items), 2):.2f}",
            }
        else:  # mixed: the image branch and the audio branch merge in a computation
            subject = rng.choice(_SUBJECTS_VIDEO)
            media = [f"{subject}_{i:03d}.mp4"]
            duration = rng.randint(90, 900)
            slide = rng.randint(3, 40)
            spoken = rng.randint(3, 40)
            q = (
                f"In {media[0]}, a slide shows a number and the narrator says another number right after it. "
                f"What is the product of the two numbers?"
            )
            answer = str(slide * spoken)
            facts = {
                "duration": duration,
                "slide": slide,
                "spoken": spoken,
                "event_t": rng.randint(10, duration - 10),
                "fps": 25,
            }
            wrong = {
                "perception": str(slide * (spoken + 10)),
                "sampling": str(slide * slide),
                "calc": str(slide * spoken + slide),
            }
        tasks.append(Task(tid, domain, difficulty, split, q, answer, media, facts, wrong))
    return tasks
