"""`AnnotationStore`: the append-only annotation files of one dataset, and loading them into a lab.

Layout::

    annotations/<dataset>/<annotator>.jsonl      one AnnotationRecord per line (append-only)
    annotations/<dataset>/_adjudications.jsonl   AdjudicationRecords (append-only)
    annotations/<dataset>/.lock                  held while a review is checked and appended

A label is changed by appending a record that `supersedes` the old one; the old line stays.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, InputFileError
from ..fsutil import make_dirs, removing_new_dirs_on_error
from ._files import Located, Problem, append_line, locked, os_error, read_file
from ._records import AdjudicationRecord, AnnotationRecord, check_name
from ._validate import check_against, effective_records

if TYPE_CHECKING:
    from ..store import Lab

SUFFIX = ".jsonl"
ADJUDICATIONS = "_adjudications.jsonl"
LOCK = ".lock"
MAX_LISTED = 20


@dataclass
class AnnotationSet:
    """Everything read from a dataset: all valid records, the effective ones, and the problems."""

    records: list[Located[AnnotationRecord]] = field(default_factory=list)
    effective: list[Located[AnnotationRecord]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]


@dataclass
class LoadReport:
    """What `load_into_lab` did."""

    dataset: str
    files: int
    records: int
    loaded: int
    problems: list[Problem]

    def format(self) -> str:
        lines = [
            f"dataset {self.dataset}: {self.loaded} labels loaded into human_labels "
            f"from {self.records} records in {self.files} files"
        ]
        lines += [f"  {p}" for p in self.problems]
        return "\n".join(lines)


def raise_problems(problems: list[Problem]) -> None:
    """Raise the first error as InputFileError, listing the others in the message."""
    errors = [p for p in problems if p.severity == "error"]
    if not errors:
        return
    first, rest = errors[0], errors[1:]
    msg = first.message
    if rest:
        listed = "\n".join(f"  {p}" for p in rest[:MAX_LISTED])
        more = f"\n  ... and {len(rest) - MAX_LISTED} more" if len(rest) > MAX_LISTED else ""
        msg += f"\n{len(rest)} more problem(s):\n{listed}{more}"
    raise InputFileError(first.path, msg, first.line)


class AnnotationStore:
    """Append-only human labels of one dataset, one JSONL file per annotator."""

    def __init__(self, root: str | os.PathLike[str] = "annotations", dataset: str = "default"):
        self.root = Path(root)
        try:
            self.dataset = check_name("dataset", dataset)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        self._cache: dict[Path, tuple[int, int, int, list[Located[AnnotationRecord]]]] = {}

    @property
    def folder(self) -> Path:
        return self.root / self.dataset

    def path_for(self, annotator: str) -> Path:
        try:
            check_name("annotator", annotator)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        return self.folder / f"{annotator}{SUFFIX}"

    @property
    def adjudications_path(self) -> Path:
        return self.folder / ADJUDICATIONS

    def files(self) -> list[Path]:
        if not self.folder.is_dir():
            return []
        return sorted(
            p for p in self.folder.glob(f"*{SUFFIX}") if not p.name.startswith(("_", ".")) and p.is_file()
        )

    def layout_problems(self) -> list[Problem]:
        """Entries that should be annotation files but are not: a dataset "folder" that is a file, or a
        `<name>.jsonl` that is a folder. They are reported, never silently skipped."""
        if self.folder.exists() and not self.folder.is_dir():
            return [Problem(str(self.folder), None, "is a file, not a dataset folder of annotation files")]
        if not self.folder.is_dir():
            return []
        return [
            Problem(str(p), None, "is a folder, not an annotation file: nothing in it was read")
            for p in sorted(self.folder.glob(f"*{SUFFIX}"))
            if not p.name.startswith(("_", ".")) and not p.is_file()
        ]

    def annotators(self) -> list[str]:
        return [p.name[: -len(SUFFIX)] for p in self.files()]

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Dataset-wide exclusive lock (used to check-then-append reviews atomically)."""
        try:
            with removing_new_dirs_on_error(self.folder):  # no lock file made: no empty folder left
                make_dirs(self.folder)
                fd = os.open(self.folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise os_error(self.folder, "write", e, "the dataset folder") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    # -- writing ---------------------------------------------------------------------------------

    def check_writable(self, annotator: str) -> None:
        """Raise InputFileError now if `annotator`'s labels could not be appended (a read-only folder, a
        folder named like the file), so a reviewer does not type a label that cannot be saved."""
        path = self.path_for(annotator)
        with self.lock():  # creates the dataset folder and its lock file: proves the folder is writable
            if not os.path.lexists(path):
                return
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_APPEND))
            except OSError as e:
                raise os_error(path, "write", e) from None

    def append(self, record: AnnotationRecord | Mapping[str, Any]) -> str:
        """Append one label (fsynced before returning) and return its record_id.

        Refuses a record that conflicts with the annotator's current label of the same trajectory
        (append one with `supersedes` to change it); an exact repeat is a no-op.
        """
        rec = _prepare(AnnotationRecord, record)
        path = self.path_for(rec.annotator)
        with locked(path) as fd:
            existing = self._scan(path)
            by_id = {loc.record.record_id: loc for loc in existing}
            if rec.record_id in by_id:
                return str(rec.record_id)
            current = {
                (loc.record.trajectory_id, loc.record.taxonomy_id): loc
                for loc in effective_records(existing, [])
            }
            _check_append(rec, path, by_id, current)
            append_line(fd, rec.to_line(), path)
        return str(rec.record_id)

    def append_adjudication(self, record: AdjudicationRecord | Mapping[str, Any]) -> str:
        rec = _prepare(AdjudicationRecord, record)
        with locked(self.adjudications_path) as fd:
            append_line(fd, rec.to_line(), self.adjudications_path)
        return str(rec.record_id)

    def _scan(self, path: Path) -> list[Located[AnnotationRecord]]:
        """Valid records of one file, parsed incrementally (call with the file lock held)."""
        try:
            st = path.stat()
        except FileNotFoundError:
            return []
        cached = self._cache.get(path)
        if cached is None or cached[0] != st.st_ino or cached[1] > st.st_size:
            cached = (st.st_ino, 0, 1, [])
        ino, offset, line, recs = cached
        new, _problems, offset, line = read_file(path, AnnotationRecord, offset, line, complete_only=True)
        recs = recs + new
        self._cache[path] = (ino, offset, line, recs)
        return recs

    # -- reading ---------------------------------------------------------------------------------

    def read(self, annotator: str | None = None) -> AnnotationSet:
        """Parse every file (or one annotator's): valid records, effective labels, and file problems."""
        out = AnnotationSet()
        if annotator is None:
            out.problems += self.layout_problems()
        paths = [self.path_for(annotator)] if annotator else self.files()
        for path in paths:
            recs, problems = _read_annotator_file(path)
            out.records += recs
            out.problems += problems
            out.effective += effective_records(recs, out.problems)
        return out

    def records(
        self,
        annotator: str | None = None,
        trajectory_id: str | None = None,
        effective: bool = False,
    ) -> list[AnnotationRecord]:
        """Valid records in file order (only the current label per annotator and trajectory with
        `effective=True`). Lines with problems are skipped; see `validate` for them."""
        s = self.read(annotator)
        located = s.effective if effective else s.records
        return [
            loc.record
            for loc in located
            if trajectory_id is None or loc.record.trajectory_id == trajectory_id
        ]

    def adjudications(self) -> tuple[list[Located[AdjudicationRecord]], list[Problem]]:
        if not self.folder.is_dir():
            return [], []  # layout_problems names a dataset "folder" that is a file
        recs, problems, _, _ = read_file(self.adjudications_path, AdjudicationRecord)
        return recs, problems

    def validate(self, lab: Lab | None = None, taxonomy: Any = None) -> list[Problem]:
        """Every problem of the dataset: file syntax, record schema, conflicts, and (given a lab or a
        taxonomy) unknown trajectories, steps, categories and taxonomy versions."""
        return self.checked(lab, taxonomy).problems

    def checked(self, lab: Lab | None = None, taxonomy: Any = None) -> AnnotationSet:
        """Like `read`, but records failing the lab/taxonomy checks are dropped and reported."""
        out = AnnotationSet(problems=self.layout_problems())
        for path in self.files():
            recs, problems = _read_annotator_file(path)
            bad, semantic = check_against(recs, lab, taxonomy)
            good = [r for r in recs if (r.path, r.line) not in bad]
            order: list[Problem] = []
            fixed: list[tuple[Located[AnnotationRecord], Located[AnnotationRecord]]] = []
            effective = effective_records(recs, order, rejected=bad, superseded_rejected=fixed)
            # A rejected line that a later record supersedes is history, not the current label: its
            # problem stays listed (file and line) as a warning, and the correction is what loads.
            by_line: dict[tuple[str, int | None], int] = {(str(t.path), t.line): loc.line for t, loc in fixed}
            semantic = [
                Problem(
                    p.path,
                    p.line,
                    f"{p.message} (superseded by line {by_line[(p.path, p.line)]}, which is used instead)",
                    "warning",
                )
                if (p.path, p.line) in by_line and p.severity == "error"
                else p
                for p in semantic
            ]
            out.records += good
            out.problems += problems + semantic + order
            out.effective += effective
        adj, adj_problems = self.adjudications()
        _, adj_semantic = check_against(adj, lab, taxonomy)
        out.problems += adj_problems + adj_semantic
        return out

    def load_into_lab(self, lab: Lab, taxonomy: Any = None, strict: bool = True) -> LoadReport:
        """Validate the dataset against the lab and taxonomy and replace its rows in `human_labels`.

        strict: any error raises InputFileError (file and line) and the lab is left unchanged;
        otherwise bad records are skipped and reported.
        """
        s = self.checked(lab, taxonomy)
        if strict:
            raise_problems(s.problems)
        rows = [_row(loc, self.dataset) for loc in s.effective]
        with lab.write("annotations-load") as txn:
            txn.delete("human_labels", "dataset", [self.dataset])
            txn.append("human_labels", rows)
            txn.summary["dataset"] = self.dataset
        return LoadReport(self.dataset, len(self.files()), len(s.records), len(rows), s.problems)


def _read_annotator_file(path: Path) -> tuple[list[Located[AnnotationRecord]], list[Problem]]:
    recs, problems, _, _ = read_file(path, AnnotationRecord)
    stem = path.name[: -len(SUFFIX)]
    good = []
    for loc in recs:
        if loc.record.annotator != stem:
            problems.append(
                Problem(
                    str(path),
                    loc.line,
                    f"annotator {loc.record.annotator!r} does not match the file name ({stem}.jsonl); "
                    "each annotator writes only their own file",
                )
            )
        else:
            good.append(loc)
    problems.sort(key=lambda p: p.line or 0)
    return good, problems


def _prepare(model: type[Any], record: Any) -> Any:
    if isinstance(record, Mapping):
        data = dict(record)
        data.setdefault("created_at", datetime.now(timezone.utc))
        try:
            record = model.model_validate(data)
        except Exception as e:  # pydantic.ValidationError
            raise ConfigError(f"invalid {model.__name__}: {e}") from e
    elif not isinstance(record, model):
        raise ConfigError(f"expected a {model.__name__} or a mapping, got {type(record).__name__}")
    expected = record.content_id()
    if record.record_id is not None and record.record_id != expected:
        raise ConfigError(f"record_id {record.record_id} does not match the record's content ({expected})")
    return record.with_id()


def _check_append(
    rec: AnnotationRecord,
    path: Path,
    by_id: Mapping[str | None, Located[AnnotationRecord]],
    current: Mapping[tuple[str, str], Located[AnnotationRecord]],
) -> None:
    key = (rec.trajectory_id, rec.taxonomy_id)
    cur = current.get(key)
    if rec.supersedes is not None:
        target = by_id.get(rec.supersedes)
        if target is None:
            raise InputFileError(str(path), f"supersedes {rec.supersedes}, which is not in this file")
        if cur is None or cur.record.record_id != rec.supersedes:
            where = f"line {cur.line} ({cur.record.record_id})" if cur else "none"
            raise InputFileError(
                str(path),
                f"supersedes {rec.supersedes} but the current label of {rec.trajectory_id} is {where}",
                target.line,
            )
        return
    if cur is not None and cur.record.label_key != rec.label_key:
        raise InputFileError(
            str(path),
            f"{rec.annotator} already labeled {rec.trajectory_id} as {cur.record.category} "
            f"(decisive step {cur.record.decisive_step_index}); to change it append a record with "
            f'"supersedes": "{cur.record.record_id}"',
            cur.line,
        )


def _row(loc: Located[AnnotationRecord], dataset: str) -> dict[str, Any]:
    r = loc.record
    return {
        "record_id": r.record_id,
        "trajectory_id": r.trajectory_id,
        "annotator": r.annotator,
        "dataset": dataset,
        "taxonomy_id": r.taxonomy_id,
        "taxonomy_version": r.taxonomy_version,
        "category": r.category,
        "decisive_step_index": r.decisive_step_index,
        "evidence_steps": list(r.evidence_steps),
        "note": r.note,
        "reviews_label_id": r.reviews_label_id,
        "review_action": r.review_action,
        "created_at": r.created_at,
        "source_file": str(loc.path),
        "source_line": loc.line,
    }
