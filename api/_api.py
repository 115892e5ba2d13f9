"""The public Python API of mapc (re-exported by `mapc`): plain arguments in, checked, then the engine.

Every entry point takes what a Python caller has at hand — the bytes or text of a file, the parsed
JSON value, or a `pathlib.Path` — and format names in any case or by an alias.  Wrong types raise
`TypeError` with a plain message before any work; bad data raises `MapcError`, whose `.problems` say
what is wrong where (a code and a JSON Pointer each; docs/cli.md lists the codes' families).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from mapc.engine import convert as _convert
from mapc.engine import detect as _detect
from mapc.engine import storyline as _storyline
from mapc.engine.catalog import Catalog
from mapc.engine.loss import Report
from mapc.engine.options import DEFAULT, Options
from mapc.engine.problems import MapcError, Problem

# Every entry point takes `catalog=`: the formats to run (a `mapc.engine.catalog.Catalog`); None is the
# shipped one ``import mapc`` installed, resolved once here and passed down to the engine explicitly.

Source = bytes | bytearray | memoryview | str | dict[str, Any] | list[Any] | os.PathLike[str]
"""What `into_storyline` and `convert` read: a file's bytes or text, a parsed JSON value, or a path."""

_JSONL = (".jsonl", ".ndjson")


def _kind(value: Any) -> str:
    return type(value).__name__


def _catalog(catalog: Any) -> Catalog:
    if catalog is None:
        return _convert.resolved(None)
    if not isinstance(catalog, Catalog):
        raise TypeError(f"catalog must be a mapc.engine.catalog.Catalog, not {_kind(catalog)}")
    return catalog


def format_name(fmt: Any, what: str = "fmt", catalog: Catalog | None = None) -> str:
    """The canonical name of format `fmt` (any case, or an alias: ``"OpenAI-Messages"`` → ``"openai-msg"``)
    in `catalog` (None: the shipped one); a name mapc does not know is returned as given (a spec file's
    path, or an error from the engine)."""
    found = _catalog(catalog)
    if isinstance(fmt, os.PathLike):
        return str(os.fspath(fmt))
    if not isinstance(fmt, str):
        raise TypeError(f"{what} must be a format name (str), such as 'atif', not {_kind(fmt)}")
    folded = fmt.strip().lower()
    if folded in _convert.formats(found):
        return folded
    name: str = found.aliases().get(folded, fmt)
    return name


def _document_path(path: Path) -> str:
    # As the command line names a document read from a file (formats that name documents by path).
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.name


def _read(data: Any, jsonl: bool | None, document_path: Any) -> tuple[bytes, bool, str | None]:
    """(bytes, jsonl, document path) of what the caller gave."""
    if document_path is not None and not isinstance(document_path, str):
        raise TypeError(f"path must be a str (the document's relative path), not {_kind(document_path)}")
    if isinstance(data, os.PathLike):
        file = Path(os.fspath(data))
        if not file.is_file():
            raise FileNotFoundError(f"no such file: {file}")
        return (
            file.read_bytes(),
            file.name.endswith(_JSONL) if jsonl is None else jsonl,
            document_path if document_path is not None else _document_path(file),
        )
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data), bool(jsonl), document_path
    if isinstance(data, str):
        # A str is the text of a file, never a file name (a file to read is a pathlib.Path): say so when
        # what was given looks like the name of a file rather than its content.
        head = data.lstrip()[:1]
        if head not in ("{", "[", "") and "\n" not in data and len(data) < 4096 and os.path.isfile(data):
            raise TypeError(
                f"data is a str, which mapc reads as the file's text, not as a file name; "
                f"to read the file, pass pathlib.Path({data!r})"
            )
        return data.encode("utf-8", "surrogatepass"), bool(jsonl), document_path
    if isinstance(data, dict | list):
        try:
            return orjson.dumps(data), False, document_path
        except TypeError as exc:
            raise TypeError(f"data is not a JSON value: {exc}") from None
    raise TypeError(
        f"data must be bytes, str (JSON text), a dict or list (parsed JSON) or a pathlib.Path, not {_kind(data)}"
    )


def _options(options: Any) -> Options:
    if options is None:
        return DEFAULT
    if not isinstance(options, Options):
        raise TypeError(f"options must be a mapc.Options, not {_kind(options)}")
    return options


def into_storyline(
    fmt: str,
    data: Source,
    *,
    jsonl: bool | None = None,
    path: str | None = None,
    options: Options | None = None,
    catalog: Catalog | None = None,
) -> list[dict[str, Any]]:
    """Read one file's documents of format `fmt` into validated Storylines (a list, one per document).

    `data` is the file's bytes, its text (a ``str`` is always text, never a file name: a file to read is
    a `pathlib.Path`), a parsed JSON value (dict or list), or a `pathlib.Path`.  A `Path` is JSONL when
    it is named ``*.jsonl``/``*.ndjson``; for bytes or text say ``jsonl=True``.  `path` is the file's
    path relative to its corpus, for formats that name their documents by path (OpenAI corpora; a
    `Path` gives its own).  `options` sets limits and the duplicate-key check (`mapc.Options`);
    `catalog` the formats (None: the shipped ones).

    Raises `MapcError` when the input is not valid `fmt`; `TypeError` for arguments of the wrong type.

    >>> stories = into_storyline("atif", Path("trajectory.json"))  # doctest: +SKIP
    """
    found = _catalog(catalog)
    fmt = format_name(fmt, catalog=found)
    raw, is_jsonl, doc_path = _read(data, jsonl, path)
    stories: list[dict[str, Any]] = _convert.into_storyline(
        fmt, raw, jsonl=is_jsonl, path=doc_path, options=_options(options), catalog=found
    )
    return stories


def _stories(stories: Any) -> list[dict[str, Any]]:
    if isinstance(stories, dict):
        return [stories]
    if isinstance(stories, list | tuple):
        return list(stories)  # what each element holds is data: the engine checks it (MapcError, with /i)
    raise TypeError(f"stories must be a Storyline (dict) or a list of them, not {_kind(stories)}")


def from_storyline(
    fmt: str, stories: dict[str, Any] | list[dict[str, Any]], *, carry: bool = True, catalog: Catalog | None = None
) -> Any:
    """Write Storylines (one dict, or a list of them) as format `fmt`: one document (a dict), a list of
    them for several roots, or text (``str``) for a text format such as AgenticMD.

    With `carry` (the default) what `fmt` has no field for travels in its ``_storyline`` envelope
    (docs/envelope.md), so reading the result back gives the Storylines whole.

    Raises `MapcError` when a Storyline is invalid or cannot be said in `fmt`; `TypeError` for wrong types.
    """
    found = _catalog(catalog)
    fmt = format_name(fmt, catalog=found)
    return _convert.from_storyline(fmt, _stories(stories), carry=bool(carry), catalog=found)


def convert(
    from_fmt: str,
    to_fmt: str,
    data: Source,
    *,
    jsonl: bool | None = None,
    path: str | None = None,
    options: Options | None = None,
    catalog: Catalog | None = None,
) -> Any:
    """Convert a file from one format to another, through Storyline: the same as
    ``from_storyline(to_fmt, into_storyline(from_fmt, data, ...))``; the arguments are `into_storyline`'s."""
    found = _catalog(catalog)
    to = format_name(to_fmt, "to_fmt", found)
    return from_storyline(
        to,
        into_storyline(from_fmt, data, jsonl=jsonl, path=path, options=options, catalog=found),
        catalog=found,
    )


def detect(
    path: str | os.PathLike[str], data: bytes | str | None = None, *, catalog: Catalog | None = None
) -> str | None:
    """The format of a file, by its name first (``run.actf.json``), then its content; None when unknown.

    `path` is the file's name or path (read when `data` is not given); `data` its bytes or text."""
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"path must be a str or a pathlib.Path, not {_kind(path)}")
    if data is not None and not isinstance(data, bytes | bytearray | memoryview | str):
        raise TypeError(f"data must be bytes or str, not {_kind(data)}")
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else None if data is None else bytes(data)
    found: str | None = _detect.detect(os.fspath(path), raw, _catalog(catalog))
    return found


def check(story: Any, *, catalog: Catalog | None = None) -> list[Problem]:
    """Every problem of one Storyline (a parsed JSON value; valid ones are dicts); [] when it is valid.
    `catalog` gives the count trees of the sources its residuals name (None: the shipped ones)."""
    problems: list[Problem] = _storyline.check(story, _catalog(catalog).count_trees())
    return problems


def formats(*, catalog: Catalog | None = None) -> list[str]:
    """Every format name mapc reads and writes (`storyline` first; aliases are accepted as well)."""
    names: list[str] = _convert.formats(_catalog(catalog))
    return names


def from_storyline_reported(
    fmt: str,
    stories: dict[str, Any] | list[dict[str, Any]],
    *,
    envelope: bool = True,
    strict: bool = False,
    catalog: Catalog | None = None,
) -> tuple[Any, Report]:
    """`from_storyline` and its loss report: ``(document, report)``.

    The `Report` says whether the conversion is exact (the target says everything natively), and
    otherwise what was carried in the ``_storyline`` envelope, synthesized or lost, each by JSON
    Pointer (docs/lossless.md).  With ``envelope=False`` the document is the pure target format
    and the report lists what that dropped; with ``strict=True`` a conversion that is not exact
    raises `MapcError` (code ``convert.not_exact``) instead."""
    found = _catalog(catalog)
    fmt = format_name(fmt, catalog=found)
    document, report = _convert.from_storyline_reported(
        fmt, _stories(stories), keep_envelope=bool(envelope), catalog=found
    )
    if strict and not report.exact:
        raise MapcError.single(
            "convert.not_exact", "", f"the conversion is not exact ({report.summary()}); strict refuses it"
        )
    return document, report


def convert_reported(
    from_fmt: str,
    to_fmt: str,
    data: Source,
    *,
    jsonl: bool | None = None,
    path: str | None = None,
    options: Options | None = None,
    envelope: bool = True,
    strict: bool = False,
    catalog: Catalog | None = None,
) -> tuple[Any, Report]:
    """`convert` and its loss report, ``(document, report)``: the report `mapc convert` prints and
    writes with ``--report`` (``envelope=False`` is ``--no-envelope``, ``strict=True`` ``--strict``)."""
    found = _catalog(catalog)
    raw, is_jsonl, doc_path = _read(data, jsonl, path)
    stories = into_storyline(from_fmt, raw, jsonl=is_jsonl, path=doc_path, options=options, catalog=found)
    to = format_name(to_fmt, "to_fmt", found)
    document, report = _convert.from_storyline_reported(
        to,
        stories,
        from_format=format_name(from_fmt, "from_fmt", found),
        keep_envelope=bool(envelope),
        catalog=found,
    )
    report = report.with_input(raw, document, lines=is_jsonl)
    if strict and not report.exact:
        raise MapcError.single(
            "convert.not_exact", "", f"the conversion is not exact ({report.summary()}); strict refuses it"
        )
    return document, report
