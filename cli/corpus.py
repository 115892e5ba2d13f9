"""Whole-corpus conversion, `mapc convert DIR --to FMT -o OUTDIR`: walk, plan, convert in worker processes, sum up.

`cli/convert.py` only checks the options, drives `run` behind a progress bar and prints `report_lines` and
`Summary.line`; the rest is here, without click and without printing, so a worker process needs nothing more.
`run` hands batches of jobs to an engine (cli/engines.py: local processes, or Ray tasks that write the
outputs themselves), so the outputs and the summary are the same whichever engine runs them.

Walk.  Every regular file under DIR, recursively and in sorted order, whose name ends in ``.json``, ``.jsonl``
or ``.ndjson``, or in the extension of a format's ``*.SUFFIX`` path rule (AgenticMD's ``*.md``); with
``--from FMT``, only that format's (`mapc.cli.files.walk`, the walk of ``mapc store DIR`` too).  Hidden entries
(a leading ``.``) and Lance tables (``*.lance``) are passed over silently; symbolic links, to files or to
directories, are never followed and are reported as skipped; a FIFO, device or socket with such a name is never
opened and fails (``file.not_regular``); OUTDIR, inside DIR, is not walked.

Output names.  A file keeps its path relative to DIR under OUTDIR; its name loses the longest known suffix (a
path-rule suffix such as ``.storyline.json`` or ``.actf.json``; ``.FORMAT.json``, ``.FORMAT.jsonl`` or
``.FORMAT.ndjson`` for any format name; plain ``.json``, ``.jsonl``, ``.ndjson``) and gains the target's: the
suffix of the target's first ``*.SUFFIX`` path rule (``.storyline.json``, ``.actf.json``, ``.md``), else
``.json``.  So ``a/run.actf.json --to storyline`` writes ``OUTDIR/a/run.storyline.json``, and
``b/runs.jsonl --to atif`` writes ``OUTDIR/b/runs.json`` holding what ``mapc convert b/runs.jsonl --to atif``
prints (one object, or an array).  When two inputs get one output name (``x.json`` and ``x.jsonl``) the first
in sorted order is converted and the others fail with ``file.output_collision``; so does an input whose output
would overwrite an input file.

A job reads its file, detects the format (path first, then content) unless ``--from`` gives it, converts
through the hub (passing the path relative to DIR: formats that name documents by path use it) and writes
the output atomically (a temporary file beside it, renamed into place): a failed file leaves no output
behind, and an output of an earlier run is left as it was.  A file of no known format is skipped; one that is
not even JSON fails with its parse error.  File-level problem codes: ``file.unreadable``,
``file.not_regular`` (a FIFO, device or socket), ``file.unwritable``, ``file.output_collision``,
``file.output_outside`` (a directory under OUTDIR is a symbolic link leading out of it: nothing is written
through one), and ``internal.error`` (a bug in mapc: that file fails, the others go on).

Resuming.  With ``--skip-existing`` a file whose output is already there is not read again (status
``existing``): outputs are only ever renamed into place whole, so one that exists was written whole;
``mapc convert DIR`` stopped by Ctrl-C goes on where it stopped.

Trees of streams.  For an event-stream format whose child streams are files of their own that name the
session that spawned them (`children: {linked: parent}`: Codex sub-agent rollouts), the plan maps each such
file's first record: a stream whose parent is under DIR is converted with the root of its tree, as one tree
of Storylines (the root's output holds them all), and is skipped as a file of its own, saying why.

Settings.  Each job carries the command's `Options` (engine/options.py: the input limit, the residual
limits, the duplicate-key check), so a worker, local or on Ray, converts with exactly those.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from mapc.cli import sessions
from mapc.cli.engines import Engine, LocalEngine
from mapc.cli.files import NotRegularFile, is_jsonl, read_limited, shown, walk, write_atomically
from mapc.cli.output import document_bytes
from mapc.cli.render import problem_line, unknown_field_line
from mapc.cli.report import lines as report_lines_of
from mapc.cli.report import owner_checked, refusal
from mapc.engine import codecs, convert, detect, envelope, residual
from mapc.engine.catalog import Catalog
from mapc.engine.loss import Report
from mapc.engine.options import DEFAULT, Options
from mapc.engine.problems import MapcError, Problem

if TYPE_CHECKING:
    from mapc.engine.redact import Redactor

JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")
CONVERTED, FAILED, SKIPPED, EXISTING = "converted", "failed", "skipped", "existing"
MB = 1_000_000


@dataclass(frozen=True, slots=True)
class LossOptions:
    """What a job does with its loss report (engine/loss.py): `strict` refuses a conversion that
    is not exact; without `keep_envelope` the output is the pure target format; with `redactor` the
    Storylines' message and tool text is redacted before the export, and the report counts it."""

    strict: bool = False
    keep_envelope: bool = True
    redactor: Redactor | None = None  # `--redact`: its compiled patterns travel to the worker with the job


class PlanError(Exception):
    """A usage mistake found while planning (OUTDIR is DIR, or a file): the command exits 2."""

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.message, self.param = message, param


@dataclass(frozen=True, slots=True)
class Job:
    """One input file to convert: its path as shown (DIR joined with `rel`), and where its output goes."""

    path: str
    rel: str
    output: str
    outdir: str
    to_fmt: str
    from_fmt: str | None = None
    size: int = 0
    options: Options = DEFAULT
    loss: LossOptions = LossOptions()
    streams: tuple[tuple[str, str], ...] = ()  # (path, rel) of child streams read with it (a tree of streams)
    catalog: Catalog | None = None  # the formats (None: the one `import mapc` built); pickled with the job


@dataclass(frozen=True, slots=True)
class FileResult:
    """What became of one file; small, so it travels back from a worker cheaply.

    A failed file keeps only its first problem and the number of problems; `unknown` holds
    ``(source, normalized key, occurrences)`` of the unknown fields of its Storylines.
    """

    path: str
    status: str
    input_bytes: int = 0
    documents: int = 0
    problem: Problem | None = None
    problems: int = 0
    reason: str = ""
    unknown: tuple[tuple[str, str, int], ...] = ()
    loss: Report | None = None  # the conversion's loss report (also of one --strict refused)
    drift: tuple[str, ...] = ()  # an event stream's drift lines (engine/stream.py), its companions' too


@dataclass(frozen=True, slots=True)
class Plan:
    """The jobs to run (largest first, for an even spread over workers) and the files settled without reading."""

    jobs: tuple[Job, ...]
    settled: tuple[FileResult, ...] = ()


@dataclass(frozen=True, slots=True)
class Summary:
    """The whole command: counts, bytes, time, the unknown-field counts and the files to report."""

    converted: int
    failed: int
    skipped: int
    documents: int
    input_bytes: int
    seconds: float
    unknown: tuple[tuple[str, str, int], ...] = ()
    failures: tuple[FileResult, ...] = ()
    skips: tuple[FileResult, ...] = ()
    existing: int = 0
    reports: tuple[FileResult, ...] = ()  # the converted files that are not exact
    drifted: tuple[FileResult, ...] = ()  # the converted files with drift lines (a newer version's records)

    @property
    def mb_per_second(self) -> float:
        return self.input_bytes / MB / self.seconds if self.seconds > 0 else 0.0

    def line(self) -> str:
        """The last line: ``converted 5 files (7 documents), 1 failed, 2 skipped; 1234 input bytes in …``."""
        return (
            f"converted {self.converted} file{'s' if self.converted != 1 else ''} "
            f"({self.documents} document{'s' if self.documents != 1 else ''}), "
            f"{self.failed} failed, {self.skipped} skipped"
            f"{f', {self.existing} already converted' if self.existing else ''}; "
            f"{self.input_bytes} input bytes in {self.seconds:.2f} s ({self.mb_per_second:.2f} MB/s)"
        )


# -- names ------------------------------------------------------------------------------------------------


def _suffix_rules(catalog: Catalog) -> list[tuple[str, str]]:
    """``(suffix, format)`` of the path rules that are ``*`` and a literal suffix (``*.actf.json``)."""
    return [
        (pattern[1:], fmt)
        for pattern, fmt in detect.path_rules(catalog=catalog)
        if pattern.startswith("*.") and not any(c in pattern[1:] for c in "*?[]/")
    ]


def _canonical(fmt: str, catalog: Catalog) -> str:
    return catalog.aliases().get(fmt, fmt)


def output_suffix(fmt: str, catalog: Catalog | None = None) -> str:
    """The suffix of files written in `fmt`: its first ``*.SUFFIX`` path rule, else ``.json``."""
    catalog = convert.resolved(catalog)
    fmt = _canonical(fmt, catalog)
    return next((suffix for suffix, f in _suffix_rules(catalog) if f == fmt), ".json")


def walked_suffixes(from_fmt: str | None = None, catalog: Catalog | None = None) -> tuple[str, ...]:
    """The file name endings a walk picks up: JSON, JSONL and the path rules' extensions (of `from_fmt` only)."""
    catalog = convert.resolved(catalog)
    wanted = None if from_fmt is None else _canonical(from_fmt, catalog)
    extra = {"." + suffix.rsplit(".", 1)[1] for suffix, f in _suffix_rules(catalog) if wanted is None or f == wanted}
    return tuple(dict.fromkeys([*JSON_SUFFIXES, *sorted(extra)]))


def _known_suffixes(catalog: Catalog) -> tuple[str, ...]:
    known = {suffix for suffix, _ in _suffix_rules(catalog)} | set(JSON_SUFFIXES)
    known |= {f".{name}{ext}" for name in convert.formats(catalog=catalog) for ext in JSON_SUFFIXES}
    return tuple(sorted(known, key=len, reverse=True))


def output_name(name: str, to_fmt: str, catalog: Catalog | None = None) -> str:
    """`name` without its longest known suffix, plus the suffix of `to_fmt` (see the module docstring)."""
    catalog = convert.resolved(catalog)
    for suffix in _known_suffixes(catalog):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    return name + output_suffix(to_fmt, catalog)


# -- planning ---------------------------------------------------------------------------------------------


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def input_files(paths: Iterable[str], from_fmt: str | None = None, catalog: Catalog | None = None) -> list[str]:
    """The files named by `paths`: each file (or ``-``) as given, and for each directory the regular files
    the walk picks up (`mapc.cli.files.walk`, as `plan` walks).  PlanError for a path that is neither,
    or a directory that holds no such file."""
    files: list[str] = []
    for given in paths:
        if given == "-" or (os.path.exists(given) and not Path(given).is_dir()):
            files.append(given)  # a FIFO or device too: reading it says what it is
            continue
        if not Path(given).is_dir():
            raise PlanError(f"cannot read {given}: no such file or directory", "INPUT")
        errors: list[OSError] = []
        found = [f.path for f in walk(given, walked_suffixes(from_fmt, catalog), errors) if f.size is not None]
        if errors:
            raise PlanError(f"cannot list {errors[0].filename}: {errors[0].strerror or errors[0]}", "INPUT")
        if not found:
            raise PlanError(f"{given} holds no {'/'.join(walked_suffixes(from_fmt, catalog))} file", "INPUT")
        files.extend(found)
    return files


def plan(
    root: str,
    outdir: str,
    to_fmt: str,
    from_fmt: str | None = None,
    *,
    skip_existing: bool = False,
    options: Options = DEFAULT,
    loss: LossOptions | None = None,
    catalog: Catalog | None = None,
) -> Plan:
    """The jobs converting every file under `root` into `outdir` (see the module docstring for the rules);
    with `skip_existing`, a file whose output is already there is settled as `EXISTING` unread."""
    catalog = convert.resolved(catalog)
    real_root, real_out = Path(os.path.realpath(root)), Path(os.path.realpath(outdir))
    if real_out == real_root:
        raise PlanError("OUTDIR is DIR itself: outputs would mix with (and could overwrite) the inputs", "-o")
    if Path(outdir).exists() and not Path(outdir).is_dir():
        raise PlanError(f"{outdir} exists and is not a directory", "-o")
    errors: list[OSError] = []
    found = list(walk(root, walked_suffixes(from_fmt, catalog), errors, prune=real_out))
    inputs = {os.path.realpath(f.path) for f in found if f.size is not None}
    jobs: list[Job] = []
    settled = [
        FileResult(
            str(exc.filename),
            FAILED,
            problem=Problem("file.unreadable", "", f"cannot list the directory: {exc.strerror or exc}"),
            problems=1,
        )
        for exc in errors
    ]
    taken: dict[str, str] = {}
    for entry in found:
        full, rel, size = entry.path, entry.rel, entry.size
        if entry.link:
            settled.append(FileResult(full, SKIPPED, reason="a symbolic link (not followed)"))
            continue
        if size is None:
            problem = Problem("file.not_regular", "", f"not a regular file ({entry.other}); mapc reads only files")
            settled.append(FileResult(full, FAILED, input_bytes=0, problem=problem, problems=1))
            continue
        out_rel = PurePosixPath(rel).parent / output_name(PurePosixPath(rel).name, to_fmt, catalog)
        output = os.path.join(outdir, *out_rel.parts)
        if out_rel.is_absolute() or ".." in out_rel.parts or not _inside(Path(os.path.realpath(output)), real_out):
            problem = Problem(
                "file.output_outside", "", f"its output {output} would lie outside {outdir} (a symbolic link?)"
            )
        elif str(out_rel) in taken:
            other = taken[str(out_rel)]
            problem = Problem("file.output_collision", "", f"its output {output} is the output of {other}")
        elif os.path.realpath(output) in inputs:
            problem = Problem("file.output_collision", "", f"its output {output} would overwrite an input file")
        else:
            taken[str(out_rel)] = full
            if skip_existing and os.path.isfile(output) and not os.path.islink(output):
                settled.append(FileResult(full, EXISTING))
            else:
                jobs.append(
                    Job(
                        full,
                        rel,
                        output,
                        outdir,
                        to_fmt,
                        from_fmt,
                        size,
                        options,
                        loss or LossOptions(),
                        catalog=catalog,
                    )
                )
            continue
        settled.append(FileResult(full, FAILED, input_bytes=0, problem=problem, problems=1))
    jobs = _trees(jobs, settled, from_fmt, options, catalog)
    jobs.sort(key=lambda j: (-j.size, j.path))
    return Plan(tuple(jobs), tuple(settled))


def _trees(
    jobs: list[Job], settled: list[FileResult], from_fmt: str | None, options: Options, catalog: Catalog
) -> list[Job]:
    """The jobs with each child stream (`convert.linked_by_parent`: its first record's Storyline names
    the session that spawned it) moved into the job of its tree's root (`Job.streams`), and settled
    as skipped."""
    own: dict[str, Job] = {}
    up: dict[str, str] = {}
    for job in jobs:
        if not is_jsonl(job.path):
            continue
        try:
            with open(job.path, "rb") as f:
                first = f.readline(options.max_input_bytes or -1)
            fmt = from_fmt or detect.detect(job.path, first, catalog=catalog)
            if fmt is None or not convert.linked_by_parent(fmt, catalog=catalog):
                continue
            (story, *_) = convert.into_storyline(fmt, first, jsonl=True, path=job.rel, options=options, catalog=catalog)
        except (OSError, ValueError, MapcError):
            continue  # a first record that says no session: the job itself says what is wrong, if anything
        own.setdefault(story["session"], job)
        psid = (story.get("parent") or {}).get("psid")
        if type(psid) is str:
            up[job.path] = psid

    def root(job: Job) -> Job:
        seen = {job.path}
        while (parent := own.get(up.get(job.path, ""))) is not None and parent.path not in seen:
            seen.add(parent.path)
            job = parent
        return job

    members: dict[str, list[Job]] = {}
    for job in jobs:
        top = root(job) if job.path in up else job
        if top is not job:
            members.setdefault(top.path, []).append(job)
            reason = f"read with {shown(top.path)}, the session it belongs to"
            settled.append(FileResult(job.path, SKIPPED, input_bytes=job.size, reason=reason))
    inside = {m.path for group in members.values() for m in group}
    out = []
    for j in jobs:
        group = members.get(j.path, [])
        if j.path not in inside:
            streams = tuple((m.path, m.rel) for m in sorted(group, key=lambda m: m.path))
            out.append(dataclasses.replace(j, streams=streams, size=j.size + sum(m.size for m in group)))
    return out


# -- one file ---------------------------------------------------------------------------------------------


def _failed(job: Job, size: int, problems: Sequence[Problem]) -> FileResult:
    return FileResult(job.path, FAILED, input_bytes=size, problem=problems[0], problems=len(problems))


def unknown_counts(
    stories: Iterable[dict], own: str | bool | None = True, catalog: Catalog | None = None
) -> tuple[tuple[str, str, int], ...]:
    """``(source, normalized key, n)`` over one file's Storylines; a ``(source, document id, pointer)`` counts once.

    With `own`, the source of the file's format (None for a format of no spec: Storyline, a codec's),
    only that source's keys are counted: the other sources' values were carried in the file's
    envelope from another format and are not keys it does not know (issue 15 §7); nor is the note
    of the keys a way back leaves out (`envelope.ABSENT`).  ``True`` counts every source."""
    trees = convert.resolved(catalog).count_trees()
    seen: set[tuple[str, object, str]] = set()
    counts: dict[tuple[str, str], int] = {}
    for story in stories:
        for source, doc_id, fields in residual.iter_sources(story.get("unknown_fields")):
            if own is not True and source != own:
                continue
            for raw in fields:
                if raw == envelope.ABSENT:
                    continue
                triple = (source, doc_id if type(doc_id) is str else repr(doc_id), raw)
                if triple in seen:
                    continue
                seen.add(triple)
                key = (source, residual.normalize(raw, trees.get(source, {})))
                counts[key] = counts.get(key, 0) + 1
    return tuple((source, key, n) for (source, key), n in sorted(counts.items()))


def _own_source(fmt: str, catalog: Catalog) -> str | None:
    """The residual source of format `fmt`'s spec; None for Storyline and codecs (no spec)."""
    if fmt == convert.STORYLINE or codecs.lookup(fmt, catalog=catalog) is not None:
        return None
    return convert.program_for(fmt, catalog=catalog).spec.source


def _write(job: Job, data: bytes) -> None:
    """Write atomically, making the directories below OUTDIR, none of which may be a symbolic link."""
    target = Path(job.output)
    here = Path(job.outdir)
    for part in target.parent.relative_to(here).parts:
        here = here / part
        if here.is_symlink():
            raise OSError(f"{here} is a symbolic link; mapc writes nothing through one")
        here.mkdir(exist_ok=True)
    write_atomically(target, data)


def convert_file(job: Job) -> FileResult:
    """Read, detect, convert and write one file; every outcome, errors included, is the returned value."""
    try:
        data = read_limited(job.path, job.options.max_input_bytes)
    except NotRegularFile as exc:  # it was swapped for a FIFO or a device after the walk
        return _failed(job, 0, [Problem("file.not_regular", "", f"{exc.strerror}; mapc reads only files")])
    except OSError as exc:
        return _failed(job, 0, [Problem("file.unreadable", "", f"cannot read the file: {exc.strerror or exc}")])
    except MapcError as exc:
        return _failed(job, 0, list(exc.problems))
    jsonl = is_jsonl(job.path)
    catalog = convert.resolved(job.catalog)  # this worker's copy of the command's catalog
    try:
        fmt = job.from_fmt or detect.detect(job.path, data, catalog=catalog)
        codec = codecs.lookup(fmt, catalog=catalog) if fmt is not None and job.from_fmt is None else None
        if codec is not None and codec.content_test is not None and not codec.content_test(data):
            # Named like the format's files but not one of them (a README.md among AgenticMD files).
            return FileResult(job.path, SKIPPED, input_bytes=len(data), reason=f"not {fmt} content")
        if fmt is None:
            convert.read_units(data, jsonl=jsonl, options=job.options)  # not even JSON: that is a failure, not a skip
            return FileResult(job.path, SKIPPED, input_bytes=len(data), reason="not a known format")
        pattern = convert.companions_pattern(fmt, catalog=catalog)
        drift: list[str] = []
        if job.streams:  # the root of a tree of streams: its child streams are read with it
            found = [(rel, read_limited(path, job.options.max_input_bytes)) for path, rel in job.streams]
            stories = convert.into_storyline_with(fmt, data, found, path=job.rel, options=job.options, catalog=catalog)
            drift.extend(
                f"{rel}: {m}" for rel, raw in found for m in convert.drift(fmt, raw, job.options, catalog=catalog)
            )
        elif pattern is None:
            stories = convert.into_storyline(fmt, data, jsonl=jsonl, path=job.rel, options=job.options, catalog=catalog)
        else:  # an event stream: its companion files (subagent transcripts) are read with it
            session = sessions.owner(pattern, job.path)
            if session is not None:
                reason = f"read with {shown(session)}, the session it belongs to"
                return FileResult(job.path, SKIPPED, input_bytes=len(data), reason=reason)
            stories = _with_companions(job, fmt, data, pattern, drift, catalog)
        drift[:0] = convert.drift(fmt, data, job.options, catalog=catalog)  # as `mapc convert FILE` warns of it
        redacted: dict[str, int] = {}
        if job.loss.redactor is not None:
            stories, redacted = job.loss.redactor.stories(stories)
        result, assessed = convert.from_storyline_reported(
            job.to_fmt, stories, from_format=fmt, keep_envelope=job.loss.keep_envelope, catalog=catalog
        )
        assessed = owner_checked(assessed.at(job.path), job.to_fmt, result).with_redacted(redacted)
        assessed = assessed.with_input(data, result, lines=jsonl)
        if job.loss.strict and not assessed.exact:
            refused = _failed(job, len(data), [refusal(assessed)])
            return dataclasses.replace(refused, loss=assessed)
        out = document_bytes(result)
    except MapcError as exc:
        return _failed(job, len(data), exc.problems or [Problem("internal.error", "", str(exc))])
    except Exception as exc:  # a bug in mapc: this file fails, the others go on
        return _failed(job, len(data), [Problem("internal.error", "", f"{type(exc).__name__}: {exc}")])
    try:
        _write(job, out)
    except OSError as exc:
        what = exc.strerror or str(exc)
        return _failed(job, len(data), [Problem("file.unwritable", "", f"cannot write {job.output}: {what}")])
    return FileResult(
        job.path,
        CONVERTED,
        input_bytes=len(data),
        documents=len(stories),
        unknown=unknown_counts(stories, _own_source(fmt, catalog), catalog),
        loss=assessed,
        drift=tuple(drift),
    )


def _with_companions(
    job: Job, fmt: str, data: bytes, pattern: str, drift: list[str], catalog: Catalog
) -> list[dict[str, Any]]:
    """The Storylines of a stream and its companion files; each companion's drift lines, named, go
    to `drift`."""
    base = Path(job.path).parent
    found = []
    for path in sessions.companions(pattern, job.path):
        found.append((Path(path).relative_to(base).as_posix(), read_limited(path, job.options.max_input_bytes)))
    stories = convert.into_storyline_with(fmt, data, found, path=job.rel, options=job.options, catalog=catalog)
    for rel, raw in found:
        drift.extend(f"{rel}: {m}" for m in convert.drift(fmt, raw, job.options, catalog=catalog))
    return stories


# -- many files -------------------------------------------------------------------------------------------


def convert_files(jobs: Sequence[Job]) -> list[FileResult]:
    """A worker's task: a batch of jobs, one after the other."""
    return [convert_file(job) for job in jobs]


def batches(jobs: Sequence[Job], parallelism: int) -> list[tuple[Job, ...]]:
    """The tasks: consecutive jobs (largest first, as planned) up to an eighth of a worker's share of the
    bytes, at most 4 MB or 64 files, so small files cost one hand-off per batch and the spread stays even;
    one job per task when there is one worker."""
    if parallelism <= 1:
        return [(job,) for job in jobs]
    limit = min(4 * MB, max(1, sum(j.size for j in jobs) // (8 * parallelism)))
    out: list[tuple[Job, ...]] = []
    current: list[Job] = []
    size = 0
    for job in jobs:
        current.append(job)
        size += job.size
        if size >= limit or len(current) >= 64:
            out.append(tuple(current))
            current, size = [], 0
    if current:
        out.append(tuple(current))
    return out


def run(jobs: Sequence[Job], workers: int = 1, engine: Engine | None = None) -> Iterator[FileResult]:
    """Convert every job, yielding results as they finish, on `engine` (default: `workers` local processes)."""
    engine = engine or LocalEngine(workers)
    tasks = batches(jobs, engine.parallelism)
    for index, results in engine.map(convert_files, tasks):
        if isinstance(results, BaseException):  # the worker died (killed, out of memory): its files failed
            message = f"the worker converting it stopped: {type(results).__name__}: {results}"
            yield from (_failed(job, job.size, [Problem("internal.error", "", message)]) for job in tasks[index])
        else:
            yield from results


def summarize(results: Iterable[FileResult], seconds: float) -> Summary:
    """Add up the results of one command; unknown fields are summed per (source, normalized key)."""
    results = sorted(results, key=lambda r: r.path)
    unknown: dict[tuple[str, str], int] = {}
    for r in results:
        for source, key, n in r.unknown:
            unknown[(source, key)] = unknown.get((source, key), 0) + n
    by_status = {r: [x for x in results if x.status == r] for r in (CONVERTED, FAILED, SKIPPED, EXISTING)}
    return Summary(
        converted=len(by_status[CONVERTED]),
        failed=len(by_status[FAILED]),
        skipped=len(by_status[SKIPPED]),
        documents=sum(r.documents for r in results),
        input_bytes=sum(r.input_bytes for r in results),
        seconds=seconds,
        unknown=tuple((source, key, n) for (source, key), n in sorted(unknown.items())),
        failures=tuple(by_status[FAILED]),
        skips=tuple(by_status[SKIPPED]),
        existing=len(by_status[EXISTING]),
        reports=tuple(r for r in by_status[CONVERTED] if r.loss is not None and not r.loss.exact),
        drifted=tuple(r for r in by_status[CONVERTED] if r.drift),
    )


def report_lines(summary: Summary) -> list[str]:
    """What stderr gets, in order: skipped files, drift (record types, keys and versions an event
    stream's spec does not know), unknown fields, each failed file's first problem.

    The summary's own `line` comes after these (left out with ``--quiet``).
    """
    lines = [shown(f"warning: skipped {r.path}: {r.reason}") for r in summary.skips]
    lines += [shown(f"{r.path}: warning: {m}") for r in summary.drifted for m in r.drift]
    lines += [unknown_field_line(source, key, n) for source, key, n in summary.unknown]
    lines += report_lines_of(r.loss for r in summary.reports if r.status == CONVERTED and r.loss is not None)
    lines += [problem_line(r.path, r.problem) for r in summary.failures if r.problem is not None]
    return lines
