"""The example run set: seeded, realistic omni-modal agent runs with planted failure causes."""

from ._generate import MODELS, ExampleSet, generate_examples, load_ground_truth, load_patterns
from ._plans import CATEGORY_WEIGHTS, PATTERNS, Act, Plan, build_plan
from ._tasks import BENCHMARK, DOMAINS, Task, make_tasks

__all__ = [
    "BENCHMARK",
    "CATEGORY_WEIGHTS",
    "DOMAINS",
    "MODELS",
    "PATTERNS",
    "Act",
    "ExampleSet",
    "Plan",
    "Task",
    "build_plan",
    "generate_examples",
    "load_ground_truth",
    "load_patterns",
    "make_tasks",
]
