"""Skill distillation (layer 8): mine success/failure contrasts into spec-valid, versioned skills.

`distill` (log-driven self-distillation), `iterate` (calibration-set self-iteration), and the skill
tools: `validate_path`, `new_skill_dir`, `install`, `compare` (paired comparison with McNemar's test).
"""

from ._compare import Comparison, compare, mcnemar
from ._demo import demo_distill
from ._distill import DistillResult, SkillOutcome, distill
from ._features import Corpus, Example, Run, command_features, is_excluded, load_corpus, run_features
from ._guard import ContaminationError, EvalIndex, Hit, read_eval_tasks
from ._install import TARGETS, install, new_skill_dir, rehash, render_prompt
from ._iterate import iterate
from ._llm import ChatClient, JudgeChat, LLMError, excerpt
from ._mine import MineParams, Rule, category_summary, merge_rules, mine_rules
from ._ops import EditResult, Op, apply_ops
from ._recovery import RecoveryReport, pattern_recovery
from ._render import generalize, guidance
from ._rounds import IterateResult, RoundResult, TaskResult, empty_skill, read_tasks
from ._skill import Budget, Item, Section, Skill, content_hash, content_hash_of, load_skill
from ._spec import (
    ALLOWED_KEYS,
    CODEX_PROMPT_BYTES,
    Issue,
    SkillReport,
    check_name,
    find_skills,
    split_frontmatter,
    validate_path,
    validate_skill,
)
from ._versions import SkillStore, Version, diff_dirs

__all__ = [
    "ALLOWED_KEYS",
    "CODEX_PROMPT_BYTES",
    "TARGETS",
    "Budget",
    "ChatClient",
    "Comparison",
    "ContaminationError",
    "Corpus",
    "DistillResult",
    "EditResult",
    "EvalIndex",
    "Example",
    "Hit",
    "Issue",
    "Item",
    "IterateResult",
    "JudgeChat",
    "LLMError",
    "MineParams",
    "Op",
    "RecoveryReport",
    "RoundResult",
    "Rule",
    "Run",
    "Section",
    "Skill",
    "SkillOutcome",
    "SkillReport",
    "SkillStore",
    "TaskResult",
    "Version",
    "apply_ops",
    "category_summary",
    "check_name",
    "command_features",
    "compare",
    "content_hash",
    "content_hash_of",
    "demo_distill",
    "diff_dirs",
    "distill",
    "empty_skill",
    "excerpt",
    "find_skills",
    "generalize",
    "guidance",
    "install",
    "is_excluded",
    "iterate",
    "load_corpus",
    "load_skill",
    "mcnemar",
    "merge_rules",
    "mine_rules",
    "new_skill_dir",
    "pattern_recovery",
    "read_eval_tasks",
    "read_tasks",
    "rehash",
    "render_prompt",
    "run_features",
    "split_frontmatter",
    "validate_path",
    "validate_skill",
]
