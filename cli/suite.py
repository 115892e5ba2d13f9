"""The conformance suite: load the language-neutral JSON cases, run them, judge the answers.

A case file (``conformance/<topic>/<name>.json``, described in ``conformance/README.md`` and
``conformance/case.schema.json``) is a list of cases; each case names a `format` and an
`operation` and holds tests, each an input with the expected output, JSON Pointer assertions
or the expected error (a stable code and a pointer, never a message).

An implementation is anything that answers a *request* ``{"operation", "format", "to"?,
"input" | "input_text", "jsonl"?}`` (for ``detect``: ``{"operation", "path", "input" |
"input_text", "jsonl"?}``, no format, which would give the answer away) with a *response*:
`run_in_process` asks mapc's own API, and `run_command` asks any program through the
documented stdin/stdout protocol.  `judge` compares a
response with a test's expectation.  Nothing here prints or exits; the CLI and pytest do.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

from mapc.engine import pointer
from mapc.engine.catalog import Catalog
from mapc.engine.problems import MapcError, Problem
from mapc.engine.values import MISSING, json_equal

OPERATIONS: Final = ("validate", "forward", "reverse", "convert", "detect")
JSONL_SUFFIXES: Final = (".jsonl", ".ndjson")
EXPECTATIONS: Final = ("valid", "output", "output_file", "assertions", "error")
SCHEMA_FILE: Final = "case.schema.json"
_SKIPPED_DIRS: Final = frozenset({"tools"})


# --- the suite as values -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Expectation:
    """What a test expects: ``valid`` (True), ``output`` (exact JSON), ``assertions`` (a list of
    ``{pointer, value}`` / ``{pointer, absent: true}``) or ``error`` (``{code, pointer}``)."""

    kind: str
    value: Any


@dataclass(frozen=True, slots=True)
class Test:
    """One test of one case, with everything needed to run and name it."""

    file: str  # the case file, relative to the suite root
    case: str
    description: str
    format: str
    operation: str
    to: str | None
    request: dict[str, Any] = field(repr=False)
    expect: Expectation = field(repr=False)
    disabled: str | None = None
    requires: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        """``format > case > test``: how reports and pytest name this test."""
        return f"{self.format} > {self.case} > {self.description}"

    @property
    def formats(self) -> tuple[str, ...]:
        """Every format the test needs an implementation to know (for ``detect``, also the
        format it expects as the answer)."""
        names = [self.format] + ([self.to] if self.to else []) + list(self.requires)
        if self.operation == "detect" and type(self.expect.value) is str:
            names.append(self.expect.value)
        return tuple(dict.fromkeys(names))


def _bad_case(file: str, at: str, message: str) -> Problem:
    return Problem("conformance.bad_case", at, f"{file}: {message}")


def case_files(root: Path) -> list[Path]:
    """The case files below `root` (``*.json`` except the case schema and ``tools/``), sorted."""
    if root.is_file():
        return [root]
    return sorted(
        p
        for p in root.rglob("*.json")
        if p.name != SCHEMA_FILE
        and not any(part in _SKIPPED_DIRS or part.startswith(".") for part in p.relative_to(root).parts)
    )


def load_suite(root: Path, formats: Iterable[str] | None = None) -> list[Test]:
    """Every test below `root` (a directory or one case file), optionally only these formats.

    Raises MapcError (code ``conformance.bad_case``) for a file that is not a list of cases of
    the documented shape; `conformance/case.schema.json` says the same in JSON Schema.
    """
    wanted = set(formats) if formats else None
    base = root if root.is_dir() else root.parent
    tests: list[Test] = []
    problems: list[Problem] = []
    for path in case_files(root):
        name = path.relative_to(base).as_posix()
        try:
            cases = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError as exc:
            problems.append(_bad_case(name, "", f"not valid JSON: {exc}"))
            continue
        if type(cases) is not list:
            problems.append(_bad_case(name, "", "a case file is a JSON array of cases"))
            continue
        for i, case in enumerate(cases):
            for test in _read_case(path, name, case, f"/{i}", problems):
                if wanted is None or test.format in wanted:
                    tests.append(test)
    if problems:
        raise MapcError(problems, source=str(root))
    return tests


def _read_case(path: Path, name: str, case: Any, at: str, problems: list[Problem]) -> Iterator[Test]:
    if type(case) is not dict or not {"description", "format", "operation", "tests"} <= case.keys():
        problems.append(_bad_case(name, at, "a case has description, format, operation and tests"))
        return
    operation = case["operation"]
    if operation not in OPERATIONS:
        problems.append(_bad_case(name, at + "/operation", f"unknown operation {operation!r}"))
        return
    to = case.get("to")
    if (operation == "convert") != (to is not None):
        problems.append(_bad_case(name, at, "`to` is given exactly for the convert operation"))
        return
    if type(case["tests"]) is not list or not case["tests"]:
        problems.append(_bad_case(name, at + "/tests", "tests is a non-empty array"))
        return
    requires = tuple(case.get("requires") or ())
    for j, test in enumerate(case["tests"]):
        tat = f"{at}/tests/{j}"
        if type(test) is not dict or type(test.get("description")) is not str:
            problems.append(_bad_case(name, tat, "a test is an object with a description"))
            continue
        request = _request(path, name, case, test, tat, problems)
        expect = _expectation(path, name, operation, test, tat, problems)
        if request is None or expect is None:
            continue
        yield Test(
            file=name,
            case=case["description"],
            description=test["description"],
            format=case["format"],
            operation=operation,
            to=to,
            request=request,
            expect=expect,
            disabled=test.get("disabled") or case.get("disabled"),
            requires=requires,
        )


def _request(
    path: Path, name: str, case: dict[str, Any], test: dict[str, Any], at: str, problems: list[Problem]
) -> dict[str, Any] | None:
    given = [k for k in ("input", "input_file", "input_text") if k in test]
    if len(given) != 1:
        problems.append(_bad_case(name, at, "a test has exactly one of input, input_file, input_text"))
        return None
    if case["operation"] == "detect":
        request: dict[str, Any] = {"operation": "detect"}
        path_name = test.get("path")
        if type(path_name) is not str or not path_name:
            problems.append(_bad_case(name, at, "a detect test has a path (the file's name)"))
            return None
        if bool(test.get("jsonl")) != path_name.endswith(JSONL_SUFFIXES):
            problems.append(
                _bad_case(name, at, f'a detect test has "jsonl": true exactly for a {"/".join(JSONL_SUFFIXES)} path')
            )
            return None
        request["path"] = path_name
    elif "path" in test:
        problems.append(_bad_case(name, at + "/path", "only a detect test has a path"))
        return None
    else:
        request = {"operation": case["operation"], "format": case["format"]}
    if case.get("to") is not None:
        request["to"] = case["to"]
    if given[0] == "input_text":
        request["input_text"] = test["input_text"]
        if test.get("jsonl"):
            request["jsonl"] = True
    elif given[0] == "input_file":
        loaded = _load_file(path, name, test["input_file"], at + "/input_file", problems)
        if loaded is MISSING:
            return None
        request["input"] = loaded
    else:
        request["input"] = test["input"]
    return request


def _load_file(path: Path, name: str, ref: Any, at: str, problems: list[Problem]) -> Any:
    """A JSON file named relative to the case file that names it."""
    if type(ref) is not str:
        problems.append(_bad_case(name, at, "a file reference is a string"))
        return MISSING
    target = (path.parent / ref).resolve()
    try:
        return orjson.loads(target.read_bytes())
    except OSError as exc:
        problems.append(_bad_case(name, at, f"cannot read {ref}: {exc.strerror or exc}"))
    except orjson.JSONDecodeError as exc:
        problems.append(_bad_case(name, at, f"{ref} is not valid JSON: {exc}"))
    return MISSING


def _expectation(
    path: Path, name: str, operation: str, test: dict[str, Any], at: str, problems: list[Problem]
) -> Expectation | None:
    given = [k for k in EXPECTATIONS if k in test]
    if len(given) != 1:
        problems.append(_bad_case(name, at, f"a test has exactly one of {', '.join(EXPECTATIONS)}"))
        return None
    kind = given[0]
    value = test[kind]
    if kind == "valid":
        if operation != "validate" or value is not True:
            problems.append(_bad_case(name, at + "/valid", '"valid": true is for the validate operation'))
            return None
    elif kind == "output_file":
        value = _load_file(path, name, value, at + "/output_file", problems)
        if value is MISSING:
            return None
        kind = "output"
    elif kind == "assertions":
        if type(value) is not list or not value or not all(_is_assertion(a) for a in value):
            problems.append(
                _bad_case(name, at + "/assertions", "assertions are {pointer, value} or {pointer, absent: true}")
            )
            return None
    elif kind == "error" and not _is_error(value):
        problems.append(_bad_case(name, at + "/error", "an error is {code, pointer} (a JSON Pointer)"))
        return None
    if operation == "validate" and kind not in ("valid", "error"):
        problems.append(_bad_case(name, at, "a validate test expects valid: true or an error"))
        return None
    if operation == "detect" and (kind != "output" or not (value is None or type(value) is str)):
        problems.append(_bad_case(name, at, "a detect test expects an output: a format name, or null (unknown)"))
        return None
    return Expectation(kind, value)


def _is_error(value: Any) -> bool:
    return (
        type(value) is dict
        and set(value) == {"code", "pointer"}
        and type(value["code"]) is str
        and type(value["pointer"]) is str
        and pointer.is_valid(value["pointer"])
    )


def _is_assertion(item: Any) -> bool:
    if type(item) is not dict or type(item.get("pointer")) is not str or not pointer.is_valid(item["pointer"]):
        return False
    keys = set(item) - {"pointer", "description"}
    return keys == {"value"} or (keys == {"absent"} and item["absent"] is True)


# --- implementations -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Response:
    """An implementation's answer: an output, errors as (code, pointer), or a protocol failure."""

    output: Any = MISSING
    errors: tuple[tuple[str, str], ...] = ()
    protocol: str | None = None  # why the answer broke the protocol, if it did

    def as_json(self) -> Any:
        """The response as the protocol writes it (for reports)."""
        if self.protocol is not None:
            return {"protocol": self.protocol}
        if self.errors:
            code, ptr = self.errors[0]
            out: dict[str, Any] = {"error": {"code": code, "pointer": ptr}}
            if len(self.errors) > 1:
                out["errors"] = [{"code": c, "pointer": p} for c, p in self.errors]
            return out
        return {"output": self.output}


Implementation = Callable[[dict[str, Any]], Response]


def _request_bytes(request: dict[str, Any]) -> tuple[bytes, bool]:
    if "input_text" in request:
        return request["input_text"].encode("utf-8"), bool(request.get("jsonl"))
    return orjson.dumps(request["input"]), False


def run_in_process(request: dict[str, Any], catalog: Catalog | None = None) -> Response:
    """Answer `request` with mapc's own API (`mapc.engine.convert`, `mapc.engine.detect`) over `catalog`
    (None: the one ``import mapc`` built)."""
    from mapc.engine import convert, detect, storyline

    catalog = convert.resolved(catalog)
    data, jsonl = _request_bytes(request)
    operation = request["operation"]
    if operation == "detect":  # by the path's name, then the given bytes; nothing is read from disk
        return Response(output=detect.detect(request["path"], data, catalog=catalog))
    fmt = request["format"]
    try:
        if operation == "validate":
            convert.into_storyline(fmt, data, jsonl=jsonl, catalog=catalog)
            return Response(output=True)
        if operation == "forward":
            return Response(output=convert.into_storyline(fmt, data, jsonl=jsonl, catalog=catalog))
        if operation == "reverse":
            stories = storyline.documents(storyline.loads(data))
            return Response(output=convert.from_storyline(fmt, stories, catalog=catalog))
        if operation == "convert":
            return Response(output=convert.convert(fmt, request["to"], data, jsonl=jsonl, catalog=catalog))
        return Response(protocol=f"unknown operation {operation!r}")
    except MapcError as exc:
        return Response(errors=tuple((p.code, p.pointer) for p in exc.problems))


def in_process_formats(catalog: Catalog | None = None) -> frozenset[str]:
    """The formats mapc itself implements (Storyline and every spec of `catalog`, None: the one
    ``import mapc`` built), and the residual source names of those specs (a case may require either)."""
    from mapc.engine import convert

    catalog = convert.resolved(catalog)
    sources = {catalog.program(name).spec.source for name in catalog.shipped_names()}
    return frozenset(convert.formats(catalog=catalog)) | sources


def command_implementation(command: str, *, timeout: float = 60.0, cwd: str | None = None) -> Implementation:
    """An implementation that runs the shell `command` once per request (the stdio protocol).

    The request is written to the command's stdin as one JSON object; the command answers on
    stdout with ``{"output": ...}`` and exit status 0, or ``{"error": {"code", "pointer"}}``
    (optionally also ``"errors": [...]`` with every error) and exit status 1.  Anything else
    (another status, stdout that is not that JSON, a timeout) is a *protocol* failure.
    """

    def run(request: dict[str, Any]) -> Response:
        return run_command(command, request, timeout=timeout, cwd=cwd)

    return run


def run_command(command: str, request: dict[str, Any], *, timeout: float, cwd: str | None) -> Response:
    """Send `request` to `command` and read its answer (see `command_implementation`)."""
    try:
        done = subprocess.run(
            command,
            shell=True,
            input=orjson.dumps(request),
            capture_output=True,
            timeout=timeout,
            cwd=cwd,
            env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        )
    except subprocess.TimeoutExpired:
        return Response(protocol=f"no answer within {timeout:g} s")
    except OSError as exc:
        return Response(protocol=f"cannot run the command: {exc}")
    return parse_answer(done.returncode, done.stdout, done.stderr)


def parse_answer(status: int, stdout: bytes, stderr: bytes = b"") -> Response:
    """Judge the shape of a command's answer; a broken one becomes a protocol failure."""
    hint = f" (stderr: {stderr.decode('utf-8', 'replace').strip()[-300:]})" if stderr.strip() else ""
    if status not in (0, 1):
        return Response(protocol=f"exit status {status}, expected 0 (output) or 1 (error){hint}")
    try:
        answer = orjson.loads(stdout)
    except orjson.JSONDecodeError:
        text = stdout.decode("utf-8", "replace").strip()[:200]
        return Response(protocol=f"stdout is not one JSON object: {text!r}{hint}")
    if type(answer) is not dict:
        return Response(protocol=f"stdout is JSON but not an object{hint}")
    if status == 0:
        if "output" not in answer or "error" in answer:
            return Response(protocol=f'exit status 0 needs {{"output": ...}} on stdout{hint}')
        return Response(output=answer["output"])
    errors = [answer.get("error"), *(answer.get("errors") or [])] if "error" in answer else []
    pairs = []
    for err in errors:
        if type(err) is not dict or type(err.get("code")) is not str or type(err.get("pointer")) is not str:
            return Response(protocol=f'exit status 1 needs {{"error": {{"code", "pointer"}}}}{hint}')
        pairs.append((err["code"], err["pointer"]))
    if not pairs:
        return Response(protocol=f'exit status 1 needs {{"error": {{"code", "pointer"}}}}{hint}')
    return Response(errors=tuple(dict.fromkeys(pairs)))


# --- judging -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Outcome:
    """The verdict on one test: ``pass``, ``fail`` or ``skip``, with what was expected and got."""

    test: Test
    status: str
    reason: str = ""
    expected: Any = None
    got: Any = None


def judge(test: Test, response: Response) -> Outcome:
    """Compare `response` with what `test` expects."""
    expect = test.expect
    if response.protocol is not None:
        return Outcome(test, "fail", f"protocol: {response.protocol}", _shown(expect), response.as_json())
    if expect.kind == "error":
        want = (expect.value["code"], expect.value["pointer"])
        if want in response.errors:
            return Outcome(test, "pass")
        reason = "expected this error" if response.errors else "expected an error, got an output"
        return Outcome(test, "fail", reason, _shown(expect), response.as_json())
    if response.errors:
        return Outcome(test, "fail", "expected no error", _shown(expect), response.as_json())
    got = response.output
    if expect.kind == "valid":
        if got is True:
            return Outcome(test, "pass")
        return Outcome(test, "fail", 'a valid input answers {"output": true}', _shown(expect), {"output": got})
    if expect.kind == "output":
        if json_equal(got, expect.value):
            return Outcome(test, "pass")
        return Outcome(test, "fail", _first_difference(expect.value, got), _shown(expect), {"output": got})
    for assertion in expect.value:
        failed = _assertion_failure(assertion, got)
        if failed:
            return Outcome(test, "fail", failed, assertion, _at(got, assertion["pointer"]))
    return Outcome(test, "pass")


def _shown(expect: Expectation) -> Any:
    if expect.kind == "valid":
        return {"output": True}
    if expect.kind == "output":
        return {"output": expect.value}
    return {expect.kind: expect.value}


def _at(doc: Any, text: str) -> Any:
    value = pointer.resolve(doc, pointer.parse(text))
    return {"absent": True} if value is MISSING else {"value": value}


def _assertion_failure(assertion: dict[str, Any], doc: Any) -> str:
    text = assertion["pointer"]
    value = pointer.resolve(doc, pointer.parse(text))
    if assertion.get("absent"):
        return "" if value is MISSING else f"expected nothing at {text or '/'}"
    if value is MISSING:
        return f"expected a value at {text or '/'}, found none"
    if not json_equal(value, assertion["value"]):
        return f"unexpected value at {text or '/'}"
    return ""


def _first_difference(want: Any, got: Any, at: str = "") -> str:
    """Where two JSON values first differ, as a short sentence."""
    where = at or "/"
    if type(want) is not type(got):
        return f"output differs at {where}: expected {_kind(want)}, got {_kind(got)}"
    if type(want) is dict:
        for key in want:
            if key not in got:
                return f"output lacks {pointer.join(at, key)}"
        for key in got:
            if key not in want:
                return f"output has an unexpected {pointer.join(at, key)}"
        for key in want:
            if not json_equal(want[key], got[key]):
                return _first_difference(want[key], got[key], pointer.join(at, key))
    if type(want) is list:
        if len(want) != len(got):
            return f"output differs at {where}: expected {len(want)} items, got {len(got)}"
        for i, (w, g) in enumerate(zip(want, got, strict=True)):
            if not json_equal(w, g):
                return _first_difference(w, g, pointer.join(at, i))
    return f"output differs at {where}"


def _kind(value: Any) -> str:
    from mapc.engine.values import json_type

    return json_type(value)


def run_suite(
    tests: Iterable[Test],
    implementation: Implementation,
    *,
    known_formats: frozenset[str] | None = None,
    jobs: int = 1,
) -> list[Outcome]:
    """Run every test (disabled ones and those needing formats not in `known_formats` are
    skipped, visibly) and return the outcomes in suite order."""
    tests = list(tests)

    def one(test: Test) -> Outcome:
        if test.disabled:
            return Outcome(test, "skip", f"disabled: {test.disabled}")
        if known_formats is not None:
            missing = [f for f in test.formats if f not in known_formats]
            if missing:
                return Outcome(test, "skip", f"format {', '.join(missing)} is not yet implemented")
        return judge(test, implementation(test.request))

    if jobs <= 1:
        return [one(t) for t in tests]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, tests))


@dataclass(frozen=True, slots=True)
class Tally:
    """Pass, fail and skip counts of one format."""

    passed: int = 0
    failed: int = 0
    skipped: int = 0


def tally(outcomes: Iterable[Outcome]) -> dict[str, Tally]:
    """Counts per format, formats sorted."""
    counts: dict[str, list[int]] = {}
    for o in outcomes:
        row = counts.setdefault(o.test.format, [0, 0, 0])
        row[("pass", "fail", "skip").index(o.status)] += 1
    return {f: Tally(*counts[f]) for f in sorted(counts)}
