"""AgenticMD (docs/formats.md, "AgenticMD"): a Markdown view of one Storyline that reads back losslessly.

A file is a YAML frontmatter holding the Storyline without its turns, then one block per turn::

    ---
    format: persisting
    storyline:                      # the Storyline root minus `turns` (and minus this format's own
      agent:                        # residuals, which go back to their places below); keys sorted
        id: a
      schema_version: storyline/v1
      session: s
    ---

    <!-- persisting:block:user {"type":"text","length":2,"message_encoding":"text","source":"user", …
         … "step_id":1,"storyline":{"id":1,"src":"user"}} -->          (one line in the file)

    hi

The block comment carries the turn without its `msg` (compact JSON, keys sorted, ``type`` and
``length`` first); the body is the `msg` itself: a string verbatim, any other value as indented
JSON.  ``length`` is the body's size in UTF-8 bytes, so a body may hold anything, marker-like text
included.  GitHub renders the frontmatter as a table and the bodies as Markdown; the comments stay
invisible.

So that tool calls do not vanish with the comments, a turn with tool calls or an observation gets
a *view* after its body: readable Markdown (``**Tool call** `fn` · `tcid` `` and the arguments,
its result, the observation, each in a fenced ``json``/``text`` block whose fence is longer than
any backtick run inside), between a ``<!-- persisting:view -->`` and a ``<!-- /persisting:view -->``
line.  The view is made from the block's metadata alone and is not part of the logical document
(nor of its id): reading makes it again and skips it; one that differs (edited by hand) is skipped
too, the metadata wins, and an `EditedView` warning (``agenticmd.view_edited``) names the block.
This is the one place mapc's layout departs from the reference's, whose reader refuses any text
between blocks (issue 21 asks for the view); files without views read as before.

Reading (`decode`) needs the frontmatter ``storyline`` object and each block's ``storyline``
object; a file without them (a legacy or hand-written view) is refused with
``agenticmd.no_storyline``.  Other frontmatter keys and other block-header keys are this format's
residuals (source ``agenticmd``, at ``/frontmatter/{key}`` and ``/blocks/{i}/header/{key}``), and
writing (`encode`) puts them back.  Problems point into the file's logical document:
``/frontmatter/…``, ``/blocks/{i}/header/…`` and ``/blocks/{i}/body``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
import warnings
from dataclasses import dataclass
from typing import Any, Final

import orjson

from mapc.engine import canonical, duplicates, plainyaml, pointer, residual, resources, storyline
from mapc.engine.codecs import Codec
from mapc.engine.options import DEFAULT, Options
from mapc.engine.problems import MapcError, Problem
from mapc.engine.values import MISSING, json_equal

NAME: Final = "agenticmd"
SOURCE: Final = "agenticmd"
FRONTMATTER_FORMAT: Final = "persisting"
MARKER: Final = b"<!-- persisting:block"
STORYLINE_KEY: Final = "storyline"
ENCODING_KEY: Final = "message_encoding"
SPEAKERS: Final = ("user", "agent", "system")
CONSUMED_FRONTMATTER: Final = frozenset({"format", STORYLINE_KEY})
CONSUMED_HEADER: Final = frozenset({"source", "step_id", ENCODING_KEY, STORYLINE_KEY})
COUNT_TREE: Final[residual.Tree] = {"blocks": {residual.ANY_STRICT_INDEX: {}}}

VIEW_OPEN: Final = "<!-- persisting:view -->"
VIEW_CLOSE: Final = "<!-- /persisting:view -->"
_BOM: Final = b"\xef\xbb\xbf"
_FENCE: Final = b"---"
_BLANK: Final = b" \t\r\n"


# --- the logical document -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Block:
    """One block: its header (``type``, ``length`` and the other fields) and its body text."""

    type: str
    fields: dict[str, Any]
    body: str

    @property
    def length(self) -> int:
        return len(self.body.encode("utf-8"))


@dataclass(frozen=True, slots=True)
class Document:
    """A parsed AgenticMD file: the frontmatter mapping and the blocks, in file order.

    `edited_views` are the indexes of blocks whose visible tool-call view differs from what the
    block's metadata says (the metadata wins; `decode` warns about each).
    """

    frontmatter: dict[str, Any]
    blocks: list[Block]
    edited_views: tuple[int, ...] = ()


def _fail(code: str, where: str, message: str) -> MapcError:
    return MapcError([Problem(code, where, message)])


# --- YAML ------------------------------------------------------------------------------------------


@functools.cache
def _dumper() -> Any:
    """The safe dumper, never writing anchors and aliases (a value shared in memory is written twice).
    Made on first use: PyYAML is imported by what reads or writes a file, not by every command that
    asks which codecs there are."""
    import yaml

    class Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
        def ignore_aliases(self, data: Any) -> bool:
            return True

    return Dumper


MAX_FRONTMATTER_DEPTH: Final = 200  # levels of YAML nesting; far below what the YAML composer's recursion allows
MAX_YAML_VALUES: Final = 200_000  # values aliases may add beyond one per character of the text


def _yaml_limits(text: str, allow_duplicate_keys: bool = False) -> plainyaml.Limits:
    """The spec reader's limits, sized for the frontmatter: without aliases a value takes at least a
    character, so only an alias expansion can pass the node cap; nesting is capped deeper than in a
    spec, since the frontmatter holds Storyline values; a repeated key is refused unless allowed."""
    return plainyaml.Limits(
        max_nodes=MAX_YAML_VALUES + len(text),
        max_depth=MAX_FRONTMATTER_DEPTH,
        duplicate_keys=allow_duplicate_keys,
    )


def _read_yaml(text: str, first_line: int = 1, allow_duplicate_keys: bool = False) -> Any:
    """The plain data of frontmatter text, read as untrusted YAML (engine/plainyaml.py): a located
    ``agenticmd.yaml`` (``agenticmd.duplicate_key``) problem at its pointer for anything else."""
    try:
        return plainyaml.load("frontmatter", text, _yaml_limits(text, allow_duplicate_keys))[0]
    except plainyaml.YamlDataError as exc:
        code = "agenticmd.duplicate_key" if exc.kind == "duplicate_key" else "agenticmd.yaml"
        at = f"line {exc.line + first_line - 1}, column {exc.column}"
        raise _fail(code, "/frontmatter" + exc.pointer, f"the frontmatter ({at}): {exc.message}") from None


def _yaml_text(mapping: dict[str, Any]) -> str:
    """`mapping` as block-style YAML, keys sorted; checked to read back as the same JSON values.

    The readable form (raw UTF-8, plain scalars where YAML allows them) is used when it reads back
    exactly; otherwise every scalar is written double-quoted with escapes, which always does.
    """
    options: dict[str, Any] = {"sort_keys": True, "default_flow_style": False, "width": 2**31 - 1}
    for style in ({"allow_unicode": True}, {"allow_unicode": False, "default_style": '"'}):
        import yaml

        text = yaml.dump(mapping, Dumper=_dumper(), **options, **style)
        why = "it reads back as other values"
        try:
            if json_equal(_read_yaml(text), mapping):  # read as `decode` will read it
                return str(text)
        except MapcError as exc:  # past the reader's limits: the file would not read back
            why = exc.problems[0].message
    raise _fail("export.invalid", "", f"the Storyline cannot be written as YAML that reads back the same: {why}")


def _json_problem(value: Any, where: str, seen: set[int]) -> Problem | None:
    """The first value under `value` that is not JSON (a YAML date, set, binary, NaN, a non-text key)."""
    t = type(value)
    if value is None or t in (bool, int, str):
        return None
    if t is float:
        return None if math.isfinite(value) else Problem("agenticmd.yaml", where, f"{value} is not a JSON number")
    if t is dict or t is list:
        if id(value) in seen:  # a YAML alias: checked once already
            return None
        seen.add(id(value))
        items = value.items() if t is dict else enumerate(value)
        for key, item in items:
            if t is dict and type(key) is not str:
                return Problem("agenticmd.yaml", where, f"the key {key!r} is not text: JSON keys are strings")
            found = _json_problem(item, pointer.join(where, key), seen)
            if found is not None:
                return found
        return None
    return Problem("agenticmd.yaml", where, f"a YAML {t.__name__} is not a JSON value")


# --- JSON ------------------------------------------------------------------------------------------


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite JSON number")
    return value


def _reject_constant(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")


# JSON nests at most this deep wherever mapc reads it (orjson's limit, for the other formats): a
# conversion may walk deeper values than Python's default stack allows, not unboundedly deep ones.
_MAX_DEPTH = 1024


def _too_deep(value: Any) -> bool:
    """Whether `value` nests deeper than `_MAX_DEPTH` (walked with a stack of its own)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if type(node) is dict:
            items: Any = node.values()
        elif type(node) is list:
            items = node
        else:
            continue
        if depth > _MAX_DEPTH:
            return True
        stack.extend((v, depth + 1) for v in items if type(v) in (dict, list))
    return False


def _json_loads(text: str, where: str, allow_duplicate_keys: bool = False) -> Any:
    """Parse JSON text exactly: integers of any size stay integers (orjson would make floats); a
    repeated key is an ``agenticmd.duplicate_key`` problem below `where` (unless allowed)."""
    hook = None if allow_duplicate_keys else duplicates.pairs_hook
    try:
        value = json.loads(text, parse_float=_finite, parse_constant=_reject_constant, object_pairs_hook=hook)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if _too_deep(value):
        raise ValueError(f"nested deeper than {_MAX_DEPTH} levels")
    _refuse_repeated(value, where)
    return value


def _refuse_repeated(value: Any, where: str) -> None:
    """`agenticmd.duplicate_key` problems of a value read with `duplicates.pairs_hook`."""
    found = list(duplicates.found(value, where, "agenticmd.duplicate_key"))
    if found:
        raise MapcError(found)


def _pretty_json(value: Any) -> str:
    """A `msg` that is not a string, as the body shows it: 2-space indented JSON, keys sorted."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode("utf-8")
    except TypeError:  # an integer beyond 64 bits
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def _header_json(block: Block) -> bytes:
    """The block header as one line of compact JSON: ``type`` and ``length`` first, the rest sorted.

    ``>`` is written ``\\u003e`` (the same JSON) so that no text in it can close the comment.
    """
    head = b'{"type":' + canonical.canonical_bytes(block.type) + b',"length":' + str(block.length).encode()
    rest = canonical.canonical_bytes(block.fields)
    text = head + (b"," + rest[1:] if len(rest) > 2 else b"}")
    return text.replace(b">", b"\\u003e")


# --- reading ----------------------------------------------------------------------------------------


def _line_at(data: bytes, pos: int) -> tuple[bytes, int]:
    """The line starting at `pos` (without its line break) and the position after the break."""
    end = data.find(b"\n", pos)
    return (data[pos:], len(data)) if end < 0 else (data[pos:end], end + 1)


def _split_frontmatter(data: bytes, allow_duplicate_keys: bool = False) -> tuple[dict[str, Any], int]:
    """The frontmatter mapping (empty without one) and where the blocks begin."""
    first, pos = _line_at(data, 0)
    if first.rstrip() != _FENCE:
        return {}, 0
    start = pos
    while pos < len(data):
        line, after = _line_at(data, pos)
        if line.rstrip() == _FENCE:
            break
        pos = after
    else:
        raise _fail(
            "agenticmd.yaml", "/frontmatter", "the frontmatter opened with `---` is never closed by a `---` line"
        )
    loaded = _read_yaml(data[start:pos].decode("utf-8"), first_line=2, allow_duplicate_keys=allow_duplicate_keys)
    if loaded is None:
        loaded = {}
    if type(loaded) is not dict:
        raise _fail("agenticmd.yaml", "/frontmatter", "the frontmatter must be a YAML mapping")
    problem = _json_problem(loaded, "/frontmatter", set())
    if problem is not None:
        raise MapcError([problem])
    return loaded, after


def _speaker_source(speaker: str) -> str:
    """The Storyline source a comment's speaker (or a legacy ``role``) names."""
    if speaker in ("assistant", "agent"):
        return "agent"
    return "user" if speaker == "user" else "system"


def _parse_header(
    line: bytes, index: int, allow_duplicate_keys: bool = False
) -> tuple[str, dict[str, Any], int | None]:
    """``(type, other fields, declared length)`` of a block comment line (already stripped)."""
    at = f"/blocks/{index}/header"
    after = line[len(MARKER) :]
    after = (after[1:] if after[:1] == b":" else after).lstrip()
    brace = after.find(b"{")
    if brace < 0:  # a bare `<!-- persisting:block:user -->`: no header, the body runs to the next block
        speaker = after.removesuffix(b"-->").strip().decode("utf-8")
        return "text", ({"source": _speaker_source(speaker)} if speaker else {}), None
    speaker = after[:brace].strip().decode("utf-8")
    rest = after[brace:]
    if not rest.endswith(b"-->"):
        raise _fail("agenticmd.bad_block", at, "the block comment is not closed by `-->` on its line")
    text = rest[:-3].strip().decode("utf-8")
    try:
        hook = None if allow_duplicate_keys else duplicates.pairs_hook
        decoder = json.JSONDecoder(parse_float=_finite, parse_constant=_reject_constant, object_pairs_hook=hook)
        header, _ = decoder.raw_decode(text)
    except RecursionError:
        raise _fail("agenticmd.bad_block", at, "the block header is nested too deeply") from None
    except ValueError as exc:
        raise _fail("agenticmd.bad_block", at, f"the block header is not a JSON object: {exc}") from None
    if _too_deep(header):
        raise _fail("agenticmd.bad_block", at, f"the block header is nested deeper than {_MAX_DEPTH} levels")
    if not isinstance(header, dict):
        raise _fail("agenticmd.bad_block", at, "the block header is not a JSON object")
    _refuse_repeated(header, at)
    kind = header.pop("type", "text")
    if type(kind) is not str:
        raise _fail("agenticmd.bad_block", f"{at}/type", "expected text for the block type")
    length = header.pop("length", None)
    if length is not None and (type(length) is not int or length < 0):
        raise _fail("agenticmd.bad_block", f"{at}/length", "expected the body's size in bytes, an integer ≥ 0")
    if speaker and "source" not in header and "role" not in header:
        header["source"] = _speaker_source(speaker)
    return kind, header, length


def _skip_blank(data: bytes, pos: int) -> int:
    while pos < len(data) and data[pos] in _BLANK:
        pos += 1
    return pos


def _parse_blocks(
    data: bytes, pos: int, edited: list[int] | None = None, allow_duplicate_keys: bool = False
) -> list[Block]:
    """The blocks from `pos` on; the index of each block whose view was edited goes to `edited`."""
    edited = [] if edited is None else edited
    rest = data[pos:]
    if not rest.strip():
        return []
    if MARKER not in rest:  # plain Markdown: one system block
        return [Block("text", {"source": "system"}, rest.strip(b"\r\n\t ").decode("utf-8"))]
    blocks: list[Block] = []
    pos = _skip_blank(data, pos)
    while pos < len(data):
        line, after = _line_at(data, pos)
        index = len(blocks)
        if not line.strip().startswith(MARKER):
            hint = " (is the `length` of the block before right?)" if blocks else ""
            raise _fail(
                "agenticmd.bad_block",
                f"/blocks/{index}",
                f"expected a block `<!-- persisting:block:{{speaker}} {{json}} -->` at byte {pos}{hint}, "
                f"found {line[:40].decode('utf-8', 'replace')!r}",
            )
        kind, fields, length = _parse_header(line.strip(), index, allow_duplicate_keys)
        if data[after : after + 1] == b"\n":  # the one blank line between the comment and the body
            after += 1
        elif data[after : after + 2] == b"\r\n":
            after += 2
        if length is None:
            end = data.find(MARKER, after)
            end = len(data) if end < 0 else end
            raw = data[after:end].rstrip(b"\r\n")
        else:
            end = after + length
            if end > len(data):
                raise _fail(
                    "agenticmd.bad_block",
                    f"/blocks/{index}/header/length",
                    f"the body of {length} bytes runs past the end of the file ({len(data) - after} bytes left)",
                )
            raw = data[after:end]
        try:
            body = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _fail(
                "agenticmd.bad_block", f"/blocks/{index}/header/length", "the body length cuts a UTF-8 character"
            ) from None
        blocks.append(Block(kind, fields, body))
        pos = _skip_blank(data, end)
        if data.startswith(_VIEW_OPEN_BYTES, pos):
            pos, same = _skip_view(data, pos, fields.get(STORYLINE_KEY), index)
            if not same:
                edited.append(index)
            pos = _skip_blank(data, pos)
    return blocks


def _skip_view(data: bytes, pos: int, meta: Any, index: int) -> tuple[int, bool]:
    """Where the view starting at `pos` ends, and whether it is the one the metadata makes.

    The expected view is made again from the block's metadata: when the file holds exactly it (with
    LF or CRLF line ends) it is skipped whatever it contains.  A view that differs (edited by hand)
    runs to the first closing line followed by the next block or the end of the file.
    """
    expected = turn_view(meta if type(meta) is dict else {}).encode("utf-8")
    for variant in (expected, expected.replace(b"\n", b"\r\n")):
        if variant and data.startswith(variant, pos):
            return pos + len(variant), True
    close = _VIEW_CLOSE_BYTES
    at = data.find(close, pos)
    while at >= 0:
        after = at + len(close)
        nxt = _skip_blank(data, after)
        if data[at - 1 : at] in (b"\n", b"") and (nxt == len(data) or data.startswith(MARKER, nxt)):
            return after, False
        at = data.find(close, after)
    raise _fail(
        "agenticmd.bad_block",
        f"/blocks/{index}/view",
        f"the tool-call view opened at byte {pos} is never closed by a `{VIEW_CLOSE}` line before the next block",
    )


def parse_document(data: bytes, *, allow_duplicate_keys: bool = False) -> Document:
    """The frontmatter and blocks of an AgenticMD file (no Storyline needed yet); a key repeated in
    the frontmatter or a block header is refused unless `allow_duplicate_keys` (the last value wins)."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail("agenticmd.not_utf8", "", f"the file is not UTF-8 text (byte {exc.start})") from None
    frontmatter, pos = _split_frontmatter(data, allow_duplicate_keys)
    edited: list[int] = []
    blocks = _parse_blocks(data, pos, edited, allow_duplicate_keys)
    return Document(frontmatter, blocks, tuple(edited))


# --- Storyline ----------------------------------------------------------------------------------------


@functools.cache
def _key_orders() -> tuple[dict[str, int], dict[str, int]]:
    """The declared key order of a Storyline root and of a turn (from the hub's schema)."""
    text = resources.read_text("mapc.schemas", "storyline-v1.schema.json")
    schema = json.loads(text)
    root = {key: i for i, key in enumerate(schema["properties"])}
    turn = {key: i for i, key in enumerate(schema["$defs"]["turn"]["properties"])}
    return root, turn


def _ordered(value: dict[str, Any], order: dict[str, int]) -> dict[str, Any]:
    return dict(sorted(value.items(), key=lambda kv: order.get(kv[0], len(order))))


def _in_file(problem: Problem) -> Problem:
    """A problem of the Storyline read from a file, pointed at its place in the file."""
    tokens = problem.pointer.split("/")  # escaped tokens; [0] is ""
    if len(tokens) > 2 and tokens[1] == "turns" and pointer.is_array_index(tokens[2]):
        block = f"/blocks/{tokens[2]}"
        if len(tokens) > 3 and tokens[3] == "msg":
            where = f"{block}/body"
        else:
            where = f"{block}/header/{STORYLINE_KEY}" + "".join("/" + t for t in tokens[3:])
    else:
        where = f"/frontmatter/{STORYLINE_KEY}{problem.pointer}"
    return dataclasses.replace(problem, pointer=where)


def document_id(document: Document) -> str:
    """The ``source_document_id`` of a file: BLAKE3 of its logical document without the Storyline.

    The reference hashes its serialized ``MarkdownDocument`` with the frontmatter ``storyline``
    removed: ``{format, frontmatter_format, session_id?, agent_id?, frontmatter, blocks: [{header:
    {type, length, …fields}, body}]}`` (docs/envelope.md).
    """
    frontmatter = {k: v for k, v in document.frontmatter.items() if k != STORYLINE_KEY}
    fmt = document.frontmatter.get("format")
    logical: dict[str, Any] = {
        "format": NAME,
        "frontmatter_format": fmt if type(fmt) is str else FRONTMATTER_FORMAT,
        "frontmatter": frontmatter,
        "blocks": [
            {"header": {**b.fields, "type": b.type, "length": b.length}, "body": b.body} for b in document.blocks
        ],
    }
    session = document.frontmatter.get("session_id", document.frontmatter.get("session"))
    if type(session) is str:
        logical["session_id"] = session
    agent = document.frontmatter.get("agent_id")
    if type(agent) is not str:
        agent = document.frontmatter.get("agent")
        agent = agent.get("id") if type(agent) is dict else agent
    if type(agent) is str:
        logical["agent_id"] = agent
    return canonical.document_id(logical)


def _own_source(story: dict[str, Any]) -> dict[str, Any] | None:
    """This format's entry in ``unknown_fields.sources``, if the Storyline has one."""
    unknown = story.get("unknown_fields")
    sources = unknown.get("sources") if type(unknown) is dict else None
    entry = sources.get(SOURCE) if type(sources) is dict else None
    return entry if type(entry) is dict else None


def _turn(block: Block, index: int, problems: list[Problem], allow_duplicate_keys: bool) -> dict[str, Any] | None:
    meta = block.fields.get(STORYLINE_KEY, MISSING)
    at = f"/blocks/{index}/header"
    if meta is MISSING:
        problems.append(
            Problem("agenticmd.no_storyline", at, "the block has no `storyline` object: the turn it shows is unknown")
        )
        return None
    if type(meta) is not dict:
        problems.append(Problem("agenticmd.bad_storyline", f"{at}/{STORYLINE_KEY}", "expected the turn, an object"))
        return None
    if "msg" in meta:
        problems.append(
            Problem("agenticmd.bad_storyline", f"{at}/{STORYLINE_KEY}/msg", "the turn's `msg` is the block's body")
        )
        return None
    if block.fields.get(ENCODING_KEY) != "json":
        return {**meta, "msg": block.body}
    try:
        return {**meta, "msg": _json_loads(block.body, f"/blocks/{index}/body", allow_duplicate_keys)}
    except ValueError as exc:
        problems.append(Problem("agenticmd.bad_block", f"/blocks/{index}/body", f"the body is not JSON: {exc}"))
    except MapcError as exc:  # a repeated key
        problems.extend(exc.problems)
    return None


def to_storyline(document: Document, *, allow_duplicate_keys: bool = False) -> dict[str, Any]:
    """The Storyline a parsed file holds, with its native residuals; MapcError if it holds none.
    A JSON body that repeats a key is refused unless `allow_duplicate_keys` (the last value wins)."""
    meta = document.frontmatter.get(STORYLINE_KEY, MISSING)
    if meta is MISSING:
        raise _fail(
            "agenticmd.no_storyline",
            "/frontmatter",
            "missing authoritative Storyline metadata: the frontmatter has no `storyline` object, so this "
            "AgenticMD file (a legacy or hand-written view?) cannot be read back as a Storyline",
        )
    at = f"/frontmatter/{STORYLINE_KEY}"
    if type(meta) is not dict:
        raise _fail("agenticmd.bad_storyline", at, "expected the Storyline without its turns, an object")
    if "turns" in meta:
        raise _fail("agenticmd.bad_storyline", f"{at}/turns", "the turns are the blocks, not frontmatter")
    own = _own_source(meta)
    if own is not None and own.get("fields"):
        raise _fail(
            "agenticmd.bad_storyline",
            f"{at}/unknown_fields/sources/{SOURCE}",
            "this file's own residuals stand at their places in the file, not in the frontmatter",
        )
    problems: list[Problem] = []
    turns = [_turn(block, i, problems, allow_duplicate_keys) for i, block in enumerate(document.blocks)]
    if problems:
        raise MapcError(problems)
    root_order, turn_order = _key_orders()
    story = dict(meta)
    story["turns"] = [_ordered(t, turn_order) for t in turns if t is not None]
    problems = [_in_file(p) for p in storyline.check(story)]
    if problems:
        raise MapcError(problems)
    fields = {
        pointer.join("/frontmatter", k): v for k, v in document.frontmatter.items() if k not in CONSUMED_FRONTMATTER
    }
    for i, block in enumerate(document.blocks):
        fields.update(
            (pointer.join(f"/blocks/{i}/header", k), v) for k, v in block.fields.items() if k not in CONSUMED_HEADER
        )
    if fields:
        unknown = story.get("unknown_fields") or {}
        sources = {
            **(unknown.get("sources") or {}),
            SOURCE: {"source_document_id": document_id(document), "fields": fields},
        }
        story["unknown_fields"] = {**unknown, "sources": sources}
        counts = {**(story.get("unknown_key_counts") or {}), SOURCE: residual.count_keys(fields, COUNT_TREE)}
        story["unknown_key_counts"] = dict(sorted(counts.items()))
    return _ordered(story, root_order)


def decode(data: bytes, path: str | None = None, options: Options = DEFAULT) -> list[dict[str, Any]]:
    """The one Storyline of an AgenticMD file; an `EditedView` warning for each edited view.
    `options` (engine/options.py): ``allow_duplicate_keys`` keeps the last value of a key repeated in
    the frontmatter, a block header or a JSON body, which is refused otherwise."""
    allow = options.allow_duplicate_keys
    document = parse_document(data, allow_duplicate_keys=allow)
    story = to_storyline(document, allow_duplicate_keys=allow)
    for index in document.edited_views:
        warnings.warn(EditedView(index), stacklevel=2)
    return [story]


# --- the visible view of tool calls ------------------------------------------------------------------------

_VIEW_OPEN_BYTES: Final = VIEW_OPEN.encode()
_VIEW_CLOSE_BYTES: Final = VIEW_CLOSE.encode()


class EditedView(UserWarning):
    """A block's visible tool-call view differs from its metadata, which wins (code ``agenticmd.view_edited``)."""

    code: Final = "agenticmd.view_edited"

    def __init__(self, index: int) -> None:
        self.pointer = f"/blocks/{index}/view"
        self.message = (
            f"the tool calls shown under block {index} were edited and differ from the block's metadata; "
            "the metadata wins (the view is written again from it)"
        )
        super().__init__(f"{self.pointer}: {self.message} [{self.code}]")


def _fenced(text: str, info: str) -> str:
    """`text` in a fenced code block whose fence is longer than any run of backticks inside."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def _shown(value: Any) -> str:
    """A value as a fenced block: text as it is, anything else as indented JSON."""
    if type(value) is str:
        return _fenced(value, "text")
    return _fenced(_pretty_json(value), "json")


def _code(text: str) -> str:
    """Text as a Markdown code span on one line (delimited by more backticks than it holds)."""
    text = " ".join(text.split())
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    tick = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return f"{tick}{pad}{text}{pad}{tick}"


def turn_view(meta: dict[str, Any]) -> str:
    """The visible Markdown of a turn's tool calls and observation ("" when it has neither).

    It stands after the block's body between ``<!-- persisting:view -->`` and
    ``<!-- /persisting:view -->`` lines; it is made from the metadata alone, so reading skips it
    (and warns when it was edited: the metadata is the source of truth).
    """
    calls = meta.get("tool_calls")
    calls = calls if type(calls) is list else []
    observation = meta.get("observation")
    if not calls and observation is None:
        return ""
    parts = [VIEW_OPEN]
    for call in calls:
        if type(call) is not dict:
            continue
        title = f"**Tool call** {_code(str(call.get('fn')))} · {_code(str(call.get('tcid')))}"
        parts += [title, _shown(call.get("args"))]
        if "result" in call:
            parts += [f"**Result** of {_code(str(call.get('tcid')))}", _shown(call["result"])]
    if observation is not None:
        parts += ["**Observation**", _shown(observation)]
    parts.append(VIEW_CLOSE)
    return "\n\n".join(parts)


# --- writing -------------------------------------------------------------------------------------------


def _turn_block(turn: dict[str, Any]) -> Block:
    msg = turn.get("msg")
    meta = {k: v for k, v in turn.items() if k != "msg"}
    text = type(msg) is str
    fields = {
        ENCODING_KEY: "text" if text else "json",
        "source": turn.get("src"),
        "step_id": turn.get("id"),
        STORYLINE_KEY: meta,
    }
    return Block("text" if text else "json", fields, msg if text else _pretty_json(msg))


def _restore(fields: dict[str, Any], frontmatter: dict[str, Any], blocks: list[Block]) -> list[Problem]:
    """Put this format's residuals back at their places; each place must be new (insert only)."""
    problems = []
    for text, value in fields.items():
        at = pointer.join(f"/unknown_fields/sources/{SOURCE}/fields", text)
        tokens = pointer.parse(text) if pointer.is_valid(text) else ()
        if len(tokens) == 2 and tokens[0] == "frontmatter":
            target = frontmatter
        elif (
            len(tokens) == 4
            and tokens[0] == "blocks"
            and tokens[2] == "header"
            and pointer.is_array_index(tokens[1])
            and int(tokens[1]) < len(blocks)
        ):
            target = blocks[int(tokens[1])].fields
        else:
            problems.append(
                Problem(
                    "residual.bad_pointer",
                    at,
                    f"an AgenticMD residual stands at /frontmatter/KEY or /blocks/N/header/KEY (N < {len(blocks)})",
                )
            )
            continue
        key = tokens[-1]
        if key in target or (target is not frontmatter and key in ("type", "length")):
            problems.append(Problem("residual.collision", at, f"the file already has a value at {text}"))
            continue
        target[key] = value
    return problems


def _speaker(block: Block) -> str:
    source = block.fields.get("source")
    if source in SPEAKERS:
        return str(source)
    role = block.fields.get("role")
    return _speaker_source(role) if type(role) is str else "system"


def encode(stories: list[dict[str, Any]]) -> str:
    """The AgenticMD text of one Storyline (already valid)."""
    if len(stories) != 1:
        raise _fail(
            "agenticmd.several_storylines",
            "",
            f"an AgenticMD file holds one Storyline, and there are {len(stories)}: write one file per Storyline",
        )
    story = stories[0]
    meta = {k: v for k, v in story.items() if k != "turns"}
    own = _own_source(story)
    fields: dict[str, Any] = {}
    if own is not None and own.get("fields"):
        fields = own["fields"]
        unknown = meta["unknown_fields"]
        meta["unknown_fields"] = {**unknown, "sources": {k: v for k, v in unknown["sources"].items() if k != SOURCE}}
        counts = meta.get("unknown_key_counts")
        if type(counts) is dict:
            meta["unknown_key_counts"] = {k: v for k, v in counts.items() if k != SOURCE}
    frontmatter: dict[str, Any] = {"format": FRONTMATTER_FORMAT, STORYLINE_KEY: meta}
    blocks = [_turn_block(turn) for turn in story.get("turns") or []]
    problems = _restore(fields, frontmatter, blocks)
    if problems:
        raise MapcError(problems)
    out = ["---\n", _yaml_text(frontmatter), "---\n\n"]
    for block in blocks:
        header = _header_json(block).decode("utf-8")
        out.append(f"{MARKER.decode()}:{_speaker(block)} {header} -->\n\n{block.body}\n\n")
        view = turn_view(block.fields[STORYLINE_KEY])
        if view:
            out.append(view + "\n\n")
    return "".join(out)


# --- detection -------------------------------------------------------------------------------------------

_FORMAT_LINE: Final = re.compile(rb"^[ \t]*format: persisting[ \t\r]*$", re.MULTILINE)


def looks_like(data: bytes) -> bool:
    """Text (not JSON) that starts with ``---`` and has a ``format: persisting`` line, or holds a
    block marker (docs/formats.md, "Detection")."""
    text = data.removeprefix(_BOM).lstrip()
    return (text.startswith(_FENCE) and _FORMAT_LINE.search(text) is not None) or MARKER in text


CODEC: Final = Codec(
    name=NAME,
    source=SOURCE,
    decode=decode,
    encode=encode,
    path_patterns=("*.md",),
    content_test=looks_like,
    count_tree=COUNT_TREE,
    description="AgenticMD: one Storyline as Markdown (YAML frontmatter + one block per turn)",
)
