"""`trajlab iterate`: calibration-set self-iteration of one skill.

Round 0 runs the user's agent (the `--runner` command) on every calibration task with the starting
skill. After each round the editor (LLM, or the rule miner offline) proposes a few add/edit/remove
edits to the best version so far; the next round runs that candidate, and it is kept only if the
calibration score strictly improves (on the tasks both versions could be scored on) and the
optional held-out score does not drop. Every task result is written to disk as soon as it is known,
so an interrupted run resumes where it stopped. Runner infrastructure failures (non-zero exit,
timeout, no output, no trajectory) are reported as such and never counted as wrong answers.

    WORK/state.json                 configuration and the decision of every finished round
    WORK/skills/<name>/ (+ .history)  the chosen version, and every version with diffs
    WORK/rounds/rNNN/skills/<name>/ the candidate given to the runner in round N
    WORK/rounds/rNNN/{calibration,heldout}/<task>/   the runner's output per task
    WORK/rounds/rNNN/results.jsonl  one line per task: status correct | wrong | infra
    WORK/lab/                       every output ingested (split calibration / heldout)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tqdm import tqdm

from ..errors import ConfigError, InputFileError
from ..fsutil import atomic_write_bytes
from ..store import Lab
from ._distill import check_out_dir
from ._features import is_excluded, load_corpus
from ._guard import EvalIndex
from ._llm import ChatClient, LLMError, excerpt
from ._mine import MineParams, Rule, feature_rule, mine_rules
from ._ops import Op, apply_ops
from ._render import generalize, guidance, section_of
from ._rounds import (
    IterateResult,
    RoundResult,
    TaskResult,
    _fill,
    _paired,
    _score,
    empty_skill,
)
from ._skill import Budget, Skill, load_skill
from ._spec import check_name, validate_skill
from ._versions import SkillStore
from ._writer import editor_prompt_hash, llm_edit_ops

ITERATE_PARAMS = MineParams(min_support=2, max_p=0.2, min_scope_runs=4, min_lift=1.1, group_by=None)
STATE = "state.json"
DONE = ".trajlab-done"  # marks a task output that is complete (hidden: ingest skips dot files)


class Iteration:
    def __init__(
        self,
        work: str | Path,
        calibration: list[str],
        runner: str,
        rounds: int,
        heldout: list[str] | None = None,
        scorer: str | None = None,
        name: str = "calibrated",
        start: str | Path | None = None,
        client: ChatClient | None = None,
        max_ops: int = 2,
        timeout_s: float = 1800.0,
        budget: Budget | None = None,
        params: MineParams | None = None,
        progress: bool = True,
        echo: Callable[[str], None] | None = None,
    ):
        if "{out_dir}" not in runner:
            raise ConfigError(
                "the runner command must contain {out_dir} (and usually {task} and {skills_dir})"
            )
        if rounds < 0:
            raise ConfigError("rounds cannot be negative")
        self.work = Path(work).absolute()
        self.calibration = calibration
        self.heldout = heldout or []
        overlap = set(self.calibration) & set(self.heldout)
        if overlap:
            raise ConfigError(f"tasks in both calibration and held-out sets: {sorted(overlap)[:3]}")
        self.runner, self.scorer, self.rounds = runner, scorer, rounds
        self.client, self.max_ops, self.timeout_s = client, max_ops, timeout_s
        self.budget = budget or Budget()
        self.params = params or ITERATE_PARAMS
        self.progress, self.echo = progress, echo or (lambda s: None)
        self.store = SkillStore(self.work / "skills")
        self.lab_path = self.work / "lab"
        self.start = Path(start) if start else None
        if self.start is not None:
            rep = validate_skill(self.start)
            if not rep.ok:
                raise InputFileError(
                    str(self.start), "not a valid starting skill: " + "; ".join(i.message for i in rep.errors)
                )
        self.name = load_skill(self.start).name if self.start else name
        why = check_name(self.name)
        if why:
            where = f"{self.start / 'SKILL.md'}: " if self.start else "--name: "
            raise ConfigError(where + why)
        check_out_dir(self.work, "--work")
        self.state = self._load_state()

    # -- state -------------------------------------------------------------------------------------

    def _config(self) -> dict[str, Any]:
        return {
            "calibration": self.calibration,
            "heldout": self.heldout,
            "runner": self.runner,
            "scorer": self.scorer,
            "name": self.name,
            "editor": getattr(self.client, "model", None) or "rule-miner",
            "max_ops": self.max_ops,
        }

    def _load_state(self) -> dict[str, Any]:
        f = self.work / STATE
        cfg = self._config()
        if f.exists():
            try:
                st = json.loads(f.read_text(encoding="utf-8"))
            except (ValueError, UnicodeDecodeError) as e:
                raise InputFileError(
                    str(f), f"damaged iteration state ({e}); use a new --work folder to start over"
                ) from None
            if not isinstance(st, dict) or not isinstance(st.get("rounds"), list):
                raise InputFileError(str(f), "not an iteration state; use a new --work folder to start over")
            if st.get("config") != cfg:
                raise ConfigError(
                    f"{self.work} holds an iteration with other settings; use a new --work folder to start over"
                )
            return st
        self.work.mkdir(parents=True, exist_ok=True)
        return {"config": cfg, "rounds": [], "incumbent": None, "next": None, "tried_rules": []}

    def _save(self) -> None:
        f = self.work / STATE
        tmp = f.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, f)

    # -- running tasks -----------------------------------------------------------------------------

    def _run_task(self, rdir: Path, skills_dir: Path, task: str, split: str) -> TaskResult | None:
        """Run the runner for one task; a TaskResult for infrastructure failures, None when output exists."""
        out = rdir / split / task
        if (out / DONE).exists():
            return None  # finished before an interruption: not run again, just ingested
        if out.exists():
            shutil.rmtree(out)  # a half-written output of an interrupted run
        out.mkdir(parents=True)
        cmd = _fill(
            self.runner,
            task=task,
            skills_dir=str(skills_dir),
            out_dir=str(out),
            skill_dir=str(skills_dir / self.name),
        )
        try:
            p = subprocess.run(
                cmd,
                shell=True,
                capture_output=True,
                text=True,
                timeout=self.timeout_s,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            return TaskResult(task, split, "infra", f"runner timed out after {self.timeout_s:.0f}s")
        if p.returncode != 0:
            tail = (p.stderr or p.stdout or "").strip().splitlines()[-1:] or [""]
            return TaskResult(task, split, "infra", f"runner exited {p.returncode}: {excerpt(tail[0], 160)}")
        if not any(f.is_file() for f in out.rglob("*")):
            return TaskResult(task, split, "infra", "runner wrote no output")
        (out / DONE).write_text("", encoding="utf-8")
        return None

    def _grade(self, lab: Lab, rdir: Path, task: str, split: str) -> TaskResult:
        out = (rdir / split / task).absolute()
        prefix = str(out) + os.sep
        ids: list[str] = []
        if lab.has("sources"):
            src = lab.read("sources", ["source_path", "status", "duplicate_of", "trajectory_ids"]).to_pylist()
            by_path = {s["source_path"]: s for s in src}
            for s in src:
                if not s["source_path"].startswith(prefix):
                    continue
                if s["status"] in ("ingested", "partial"):
                    ids += s["trajectory_ids"]
                elif s["status"] == "duplicate" and s["duplicate_of"] in by_path:
                    ids += by_path[s["duplicate_of"]]["trajectory_ids"]
        if not ids:
            return TaskResult(task, split, "infra", "no trajectory could be read from the runner's output")
        if self.scorer:
            cmd = _fill(self.scorer, task=task, out_dir=str(out))
            try:
                p = subprocess.run(
                    cmd,
                    shell=True,
                    capture_output=True,
                    text=True,
                    timeout=self.timeout_s,
                    stdin=subprocess.DEVNULL,
                )
            except subprocess.TimeoutExpired:
                return TaskResult(task, split, "infra", "scorer timed out", ids)
            if p.returncode in (0, 1):
                return TaskResult(task, split, "correct" if p.returncode == 0 else "wrong", "scorer", ids)
            return TaskResult(task, split, "infra", f"scorer exited {p.returncode}", ids)
        import pyarrow.compute as pc

        t = lab.read("trajectories", ["trajectory_id", "outcome"], filter=pc.field("trajectory_id").isin(ids))
        outcomes = set(t.column("outcome").to_pylist())
        if outcomes <= {"unknown"}:
            return TaskResult(task, split, "infra", "the run records no outcome (give --scorer)", ids)
        status = "correct" if "success" in outcomes and "failure" not in outcomes else "wrong"
        return TaskResult(task, split, status, "runner outcome", ids)

    def _evaluate(self, r: int, skill: Skill, version: int) -> tuple[dict[str, str], dict[str, str]]:
        rdir = self.work / "rounds" / f"r{r:03d}"
        skills_dir = rdir / "skills"
        if not (skills_dir / self.name / "SKILL.md").exists():
            tmp = rdir / ".skills-tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            skill.write(tmp / self.name)
            rdir.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, skills_dir)
        res_file = rdir / "results.jsonl"
        done = self._read_results(res_file)
        jobs = [(t, "calibration") for t in self.calibration] + [(t, "heldout") for t in self.heldout]
        todo = [(t, s) for t, s in jobs if (s, t) not in done]
        pending: list[tuple[str, str]] = []
        bar = tqdm(todo, desc=f"round {r} (v{version})", unit="task", disable=not self.progress)
        for task, split in bar:
            infra = self._run_task(rdir, skills_dir, task, split)
            if infra is not None:
                self._record(res_file, infra, done)
            else:
                pending.append((task, split))
        if pending:
            from ..ingest import ingest

            for split in ("calibration", "heldout"):
                if any(s == split for _, s in pending):
                    ingest(
                        [rdir / split],
                        self.lab_path,
                        workers=1,
                        progress=False,
                        defaults={
                            "split": split,
                            "condition": f"iterate:v{version}",
                            # the tag is authoritative: a runner that records its own split
                            # (`train`, `dev`...) in its files keeps it, but a held-out run tagged
                            # `split:heldout` is still never mined (load_corpus, EvalIndex)
                            "tags": ["iterate", f"round:{r}", f"split:{split}"],
                        },
                    )
            lab = Lab.open(self.lab_path)
            for task, split in pending:
                self._record(res_file, self._grade(lab, rdir, task, split), done)
        cal = {t: done[("calibration", t)].status for t in self.calibration}
        held = {t: done[("heldout", t)].status for t in self.heldout}
        return cal, held

    @staticmethod
    def _read_results(f: Path) -> dict[tuple[str, str], TaskResult]:
        """Results recorded so far. A last line cut off by an interruption is dropped (and cut from the
        file, so the next append starts a fresh line): that task is graded again, never counted twice."""
        done: dict[tuple[str, str], TaskResult] = {}
        if not f.exists():
            return done
        raw = f.read_bytes()
        if raw and not raw.endswith(b"\n"):
            raw = raw[: raw.rfind(b"\n") + 1]
            atomic_write_bytes(f, raw)
        for n, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), 1):
            if not line.strip():
                continue
            try:
                tr = TaskResult(**json.loads(line))
            except (ValueError, TypeError) as e:
                raise InputFileError(
                    str(f), f"damaged task result ({e}); delete the line to run that task again", n
                ) from None
            done[(tr.split, tr.task)] = tr
        return done

    @staticmethod
    def _record(f: Path, tr: TaskResult, done: dict[tuple[str, str], TaskResult]) -> None:
        with open(f, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(asdict(tr)) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        done[(tr.split, tr.task)] = tr

    # -- editing -----------------------------------------------------------------------------------

    def _failures(self, r: int) -> list[dict[str, Any]]:
        """Short redacted excerpts of what the agent did on failed calibration tasks (for the LLM editor)."""
        lab = Lab.open(self.lab_path)
        import pyarrow.compute as pc

        t = lab.read(
            "trajectories",
            ["trajectory_id", "task_id", "outcome", "split", "tags"],
            filter=pc.field("outcome") == "failure",
        ).to_pylist()
        out = []
        for row in t:
            tags = row["tags"] or []
            if f"round:{r}" not in tags or is_excluded(row["split"], tags):
                continue
            if "split:calibration" not in tags and row["split"] != "calibration":
                continue
            steps = lab.read_trajectory_steps(row["trajectory_id"], ["kind", "command"]).to_pylist()
            cmds = [generalize(s["command"]) for s in steps if s["kind"] == "tool_call" and s["command"]]
            out.append({"task": row["task_id"], "commands": cmds[:8]})
        return out

    def _propose(self, incumbent: Skill, r: int) -> tuple[list[Op], list[Rule]]:
        if not (self.lab_path / "lab.json").exists():
            return [], []  # no run produced a trajectory yet (all infrastructure failures)
        lab = Lab.open(self.lab_path)
        corpus = load_corpus(lab)
        rules = mine_rules(corpus, self.params) if corpus.successes and corpus.failures else []
        tried = set(self.state["tried_rules"])
        present = incumbent.rule_keys()
        present_features = {k.split("|", 2)[2] for k in present}
        fresh = [
            x
            for x in rules
            if x.key not in present and x.key not in tried and x.feature not in present_features
        ]
        if self.client is not None:
            try:
                ops = llm_edit_ops(self.client, incumbent, self._failures(r), fresh or rules, self.max_ops)
                if ops:
                    return ops, rules
            except LLMError as e:
                self.echo(f"LLM editor failed ({e}); using the rule miner for this round")
        ops = []
        for s, it in incumbent.items():  # remove guidance the evidence now contradicts
            if it.rule and len(ops) < self.max_ops:
                direction, scope, feature = it.rule.split("|", 2)
                now = feature_rule(corpus, feature, direction, scope, self.params)
                if now is not None and now.n_with >= self.params.min_support and now.lift < 1.0:
                    ops.append(Op("remove", s.title, item_id=it.id, rule=it.rule, reason="contradicted"))
        for x in fresh:
            if len(ops) >= self.max_ops:
                break
            ops.append(Op("add", section_of(x), guidance(x, rules), rule=x.key, reason="mined rule"))
        return ops, rules

    # -- the loop ----------------------------------------------------------------------------------

    def run(self) -> IterateResult:
        st = self.state
        while len(st["rounds"]) <= self.rounds:
            if st["next"] is None:
                if not st["rounds"]:
                    start = load_skill(self.start) if self.start else empty_skill(self.name)
                    v = self.store.commit(start, "starting skill", live=True)
                    st["next"] = {"version": v.version, "ops": [], "rejected_ops": []}
                elif not self._next_candidate(len(st["rounds"])):
                    self.echo("the editor proposed no applicable edit; stopping")
                    break
                self._save()
            r = len(st["rounds"])
            nxt = st["next"]
            cand = self.store.get(self.name, nxt["version"])
            cal, held = self._evaluate(r, cand, nxt["version"])
            accepted, decision = self._decide(cal, held)
            rr = RoundResult(
                r,
                nxt["version"],
                cal,
                held,
                _score(cal),
                _score(held) if self.heldout else None,
                accepted,
                decision,
                nxt["ops"],
                nxt["rejected_ops"],
            )
            if accepted:
                st["incumbent"] = nxt["version"]
            else:
                st["tried_rules"] = sorted(
                    {*st["tried_rules"], *(o["rule"] for o in nxt["ops"] if o.get("rule"))}
                )
            st["rounds"].append(asdict(rr))
            st["next"] = None
            self._save()
            self.echo(
                f"round {r}: v{rr.version} calibration={rr.cal_score} heldout={rr.heldout_score} {decision}"
            )
        chosen = st["incumbent"]
        self.store.publish_version(self.name, chosen)
        rounds = [RoundResult(**x) for x in st["rounds"]]
        self._write_curve(rounds)
        return IterateResult(self.work, self.name, rounds, chosen, self.store.live(self.name))

    def _decide(self, cal: dict[str, str], held: dict[str, str]) -> tuple[bool, str]:
        st = self.state
        inc = st["incumbent"]
        if inc is None:
            return True, "baseline"
        prev = next(x for x in st["rounds"] if x["version"] == inc and x["accepted"])
        new_c, old_c = _paired(cal, prev["calibration"])
        new_h, old_h = _paired(held, prev["heldout"]) if self.heldout else (None, None)
        if new_c is None or old_c is None:
            return False, "rejected: no calibration task could be scored for both versions"
        if new_c <= old_c:
            return False, f"rejected: calibration {new_c:.3f} does not beat {old_c:.3f}"
        if new_h is not None and old_h is not None and new_h < old_h:
            return False, f"rejected: held-out dropped {old_h:.3f} -> {new_h:.3f}"
        return True, f"accepted: calibration {old_c:.3f} -> {new_c:.3f}"

    def _next_candidate(self, r: int) -> bool:
        """Edit the incumbent into the candidate of round r; False when the editor has nothing to add."""
        st = self.state
        incumbent = self.store.get(self.name, st["incumbent"])
        ops, _ = self._propose(incumbent, r - 1)
        res = apply_ops(incumbent, ops, self.budget)
        if not res.applied:
            return False
        sk = self._with_provenance(res.skill, r)
        guard = EvalIndex.from_lab(Lab.open(self.lab_path))
        v = self._commit_checked(
            sk,
            guard,
            f"round {r} candidate (edits v{st['incumbent']})",
            [o.to_dict() for o in res.applied],
            st["incumbent"],
        )
        st["next"] = {
            "version": v,
            "ops": [o.to_dict() for o in res.applied],
            "rejected_ops": [{**o.to_dict(), "why": why} for o, why in res.rejected],
        }
        return True

    def _with_provenance(self, sk: Skill, r: int) -> Skill:
        """Record item -> rule links and the iteration settings in references/provenance.json."""
        f = "references/provenance.json"
        try:
            prov = json.loads(sk.references.get(f, "{}"))
        except ValueError:
            prov = {}
        prov["skill"] = sk.name
        prov["items"] = [{"id": it.id, "section": s.title, "rule": it.rule} for s, it in sk.items()]
        prov["iterate"] = {
            "round": r,
            "editor": getattr(self.client, "model", None) or "rule-miner",
            "editor_prompt_hash": editor_prompt_hash() if self.client is not None else None,
            "calibration_tasks": len(self.calibration),
            "heldout_tasks": len(self.heldout),
            "lab": str(self.lab_path),
            "params": asdict(self.params),
        }
        sk.references[f] = json.dumps(prov, indent=2, sort_keys=True) + "\n"
        return sk

    def _commit_checked(
        self, sk: Skill, guard: EvalIndex, reason: str, ops: list[dict[str, Any]], base: int | None
    ) -> int:
        from ._distill import write_checked

        return write_checked(self.store, sk, guard, reason, ops, base).version

    def _write_curve(self, rounds: list[RoundResult]) -> None:
        rows = [
            {
                "round": r.round,
                "version": r.version,
                "calibration": r.cal_score,
                "heldout": r.heldout_score,
                "accepted": r.accepted,
                "infra_failures": r.infra,
                "decision": r.decision,
            }
            for r in rounds
        ]
        (self.work / "curve.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


def iterate(work: str | Path, calibration: list[str], runner: str, rounds: int, **kw: Any) -> IterateResult:
    """Run (or resume) calibration-set self-iteration; see the module docstring."""
    return Iteration(work, calibration, runner, rounds, **kw).run()
