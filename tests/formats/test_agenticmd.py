"""AgenticMD (mappings/agenticmd.py) against docs/formats.md (AgenticMD) and docs/envelope.md.

1. laws: decode(encode(s)) == s for generated Storylines (hostile bodies and keys), the shipped
   fixtures through the hub, and native residuals written back where they were read;
2. the layout: frontmatter, block comment, body verbatim, length in UTF-8 bytes;
3. reading: length-prefixed bodies holding marker-like text, bodies without a length, CRLF, one
   system block for plain text, native residuals at their pointers with the BLAKE3 document id;
4. rejects: the legacy file without Storyline metadata, and every other way a file can be wrong,
   each with its code and pointer into the file's logical document;
5. writing: one Storyline per file, residuals that have no place, collisions.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import blake3
import orjson
import pytest
from conftest import FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import json_values, storyline_documents

from mapc.engine import pointer
from mapc.engine.convert import from_storyline, into_storyline
from mapc.engine.problems import MapcError
from mapc.engine.values import json_equal
from mapc.mappings import agenticmd

LAWS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LEGACY = FIXTURES / "agenticmd" / "legacy-demo-run-001.md"
HUB_FIXTURES = sorted((FIXTURES / "atif").glob("*.json")) + sorted((FIXTURES / "actf").glob("*.json"))
MARKER = "<!-- persisting:block"


def encode(story: dict[str, Any]) -> str:
    text = from_storyline("agenticmd", [copy.deepcopy(story)])
    assert type(text) is str
    return text


def decode(text: str | bytes) -> dict[str, Any]:
    [story] = into_storyline("agenticmd", text.encode() if isinstance(text, str) else text)
    return story


def problems(text: str | bytes) -> list[tuple[str, str]]:
    with pytest.raises(MapcError) as info:
        decode(text)
    return [(p.code, p.pointer) for p in info.value.problems]


def export_problems(story: Any) -> list[tuple[str, str]]:
    stories = story if isinstance(story, list) else [story]
    with pytest.raises(MapcError) as info:
        from_storyline("agenticmd", stories)
    return [(p.code, p.pointer) for p in info.value.problems]


def story(*turns: dict[str, Any], **root: Any) -> dict[str, Any]:
    return {"schema_version": "storyline/v1", "session": "s", "agent": {"id": "a"}, **root, "turns": list(turns)}


def turn(turn_id: int, msg: Any, src: str = "user", **more: Any) -> dict[str, Any]:
    return {"id": turn_id, "src": src, "msg": msg, **more}


def canonical_hash(value: Any) -> str:
    """BLAKE3 of canonical JSON, computed here without mapc (sorted keys, compact, raw UTF-8)."""
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    return blake3.blake3(text).hexdigest()


# --- 1. laws ------------------------------------------------------------------------------------------

# Bodies that would break a reader that looked for markers or trimmed newlines.
HOSTILE_BODIES = (
    "",
    "\n",
    "\n\nleading and trailing blank lines\n\n",
    "\r\n",
    "line\r\nbreaks\rand\n",
    " spaces around ",
    "---",
    "---\nformat: persisting\n---\n",
    f'{MARKER}:user {{"type":"text","length":3}} -->\n\nfoo\n',
    f"text\n\n{MARKER}:agent -->\n\n",
    "-->",
    "<!-- a comment --> and `code`",
    "你好！有什么可以帮你的？",
    "🙂\u2028\u0085\ufeff",
)


@st.composite
def agenticmd_stories(draw: st.DrawFn) -> dict[str, Any]:
    """A valid Storyline whose messages are often text a Markdown reader could stumble over."""
    doc = draw(storyline_documents())
    for t in doc["turns"]:
        t["msg"] = draw(st.one_of(st.sampled_from(HOSTILE_BODIES), st.text(max_size=12), json_values(3)))
    return doc


@LAWS
@given(agenticmd_stories())
def test_decode_of_encode_is_the_storyline(doc):
    text = encode(doc)
    assert json_equal(decode(text), doc)


@LAWS
@given(agenticmd_stories())
def test_encoding_is_deterministic_and_stable(doc):
    text = encode(doc)
    assert encode(decode(text)) == text


@pytest.mark.parametrize("path", HUB_FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixtures_through_agenticmd_are_the_same_storylines(path: Path):
    fmt = path.parent.name
    stories = into_storyline(fmt, path.read_bytes())
    back = [decode(encode(s)) for s in stories]
    assert json_equal(back, stories)
    # … so the document the fixture's own format rebuilds is the same too.
    assert json_equal(from_storyline(fmt, back), from_storyline(fmt, copy.deepcopy(stories)))


def test_foreign_residuals_travel_in_the_frontmatter():
    s = story(
        turn(1, "hi"),
        unknown_fields={"sources": {"atif": {"source_document_id": "d", "fields": {"/steps/0/vendor": 7}}}},
        unknown_key_counts={"atif": {"/steps/*/vendor": 1}},
    )
    text = encode(s)
    assert "unknown_fields:" in text.split("\n---\n")[0]
    assert json_equal(decode(text), s)


@st.composite
def stories_with_native_residuals(draw: st.DrawFn) -> dict[str, Any]:
    """A Storyline holding AgenticMD residuals at places a file has (frontmatter and block headers)."""
    doc = draw(storyline_documents())
    keys = st.text(max_size=5).filter(lambda k: k not in agenticmd.CONSUMED_FRONTMATTER)
    fields = {
        pointer.join("/frontmatter", k): v for k, v in draw(st.dictionaries(keys, json_values(2), max_size=2)).items()
    }
    header_keys = st.text(max_size=5).filter(lambda k: k not in agenticmd.CONSUMED_HEADER | {"type", "length"})
    for i in range(len(doc["turns"])):
        for k, v in draw(st.dictionaries(header_keys, json_values(2), max_size=2)).items():
            fields[pointer.join(f"/blocks/{i}/header", k)] = v
    if fields:
        unknown = doc.get("unknown_fields") or {"sources": {}}
        unknown["sources"]["agenticmd"] = {"source_document_id": "from an earlier file", "fields": fields}
        doc["unknown_fields"] = unknown
        counts = {k: v for k, v in (doc.get("unknown_key_counts") or {}).items()}
        counts["agenticmd"] = {}
        for p in fields:
            key = re.sub(r"^/blocks/(0|[1-9][0-9]*)/", "/blocks/*/", p)
            counts["agenticmd"][key] = counts["agenticmd"].get(key, 0) + 1
        doc["unknown_key_counts"] = counts
    return doc


@LAWS
@given(stories_with_native_residuals())
def test_native_residuals_go_back_to_their_places(doc):
    text = encode(doc)
    first = decode(text)
    # Everything comes back; only the document id is the one of the file just written.
    own = (doc.get("unknown_fields") or {}).get("sources", {}).get("agenticmd")
    if own is not None:
        got = first["unknown_fields"]["sources"]["agenticmd"]
        assert got["fields"] == own["fields"] and json_equal(got["fields"], own["fields"])
        own["source_document_id"] = got["source_document_id"]
    assert json_equal(first, doc)
    assert json_equal(decode(encode(first)), first)  # and from then on, exactly


# --- 2. the layout ------------------------------------------------------------------------------------


def test_the_layout_is_the_references():
    s = story(turn(1, "hi"), turn(2, {"b": [1, 2], "a": None}, src="agent", model="m"), notes="n")
    text = encode(s)
    head, _, rest = text.partition("\n---\n\n")
    assert head.startswith("---\nformat: persisting\nstoryline:\n")
    assert "  notes: n\n" in head and "turns" not in head
    blocks = rest.split("\n\n" + MARKER)
    assert blocks[0] == (
        MARKER + ':user {"type":"text","length":2,"message_encoding":"text","source":"user","step_id":1,'
        '"storyline":{"id":1,"src":"user"}} -->\n\nhi'
    )
    pretty = '{\n  "a": null,\n  "b": [\n    1,\n    2\n  ]\n}'  # sorted keys, 2-space indent
    assert blocks[1] == (
        f':agent {{"type":"json","length":{len(pretty)},"message_encoding":"json","source":"agent","step_id":2,'
        f'"storyline":{{"id":2,"model":"m","src":"agent"}}}} -->\n\n{pretty}\n\n'
    )


def test_length_counts_utf8_bytes_and_other_sources_speak_as_system():
    text = encode(story(turn(1, "你好", src="tool")))
    assert ':system {"type":"text","length":6,' in text and '"source":"tool"' in text
    assert decode(text)["turns"][0]["src"] == "tool"


def test_no_value_can_close_the_block_comment():
    s = story(turn(1, "x", extra={"html": "--> <b>--!></b>"}))
    text = encode(s)
    comment = next(line for line in text.splitlines() if line.startswith(MARKER))
    assert comment.count(">") == 1 and comment.endswith(" -->")
    assert json_equal(decode(text), s)


def test_several_storylines_are_refused():
    assert export_problems([story(), story(session="t")]) == [("agenticmd.several_storylines", "")]


# --- 3. reading ---------------------------------------------------------------------------------------

FRONT = (
    "---\nformat: persisting\nstoryline:\n  schema_version: storyline/v1\n  session: s\n  agent:\n    id: a\n---\n\n"
)


def block(meta: dict[str, Any], body: str, *, length: int | None = None, speaker: str = "user", **fields: Any) -> str:
    header = {"type": "text", **({"length": length} if length is not None else {}), "storyline": meta, **fields}
    return f"{MARKER}:{speaker} {orjson.dumps(header).decode()} -->\n\n{body}\n\n"


def test_a_body_is_read_by_its_length_whatever_it_holds():
    body = f'a\n\n{MARKER}:agent {{"type":"text"}} -->\n\nnot a block\n\n'
    text = (
        FRONT
        + block({"id": 1, "src": "user"}, body, length=len(body.encode()))
        + block({"id": 2, "src": "agent"}, "ok", length=2)
    )
    s = decode(text)
    assert [t["msg"] for t in s["turns"]] == [body, "ok"]


def test_a_body_without_length_runs_to_the_next_block_trimmed():
    text = FRONT + block({"id": 1, "src": "user"}, "one\n") + block({"id": 2, "src": "agent"}, "two")
    assert [t["msg"] for t in decode(text)["turns"]] == ["one", "two"]


def test_the_blank_line_after_the_comment_is_optional():
    header = '{"type":"text","length":6,"storyline":{"id":1,"src":"user"}}'
    text = FRONT + f"{MARKER}:user {header} -->\n请检\n"
    assert decode(text)["turns"][0]["msg"] == "请检"


def test_crlf_files_read_the_same():
    s = story(turn(1, "hi"), turn(2, "there", src="agent"))
    text = encode(s).replace("\n", "\r\n")
    # The bodies hold no line break, so their lengths still hold.
    assert json_equal(decode(text), s)


def test_a_byte_order_mark_is_ignored():
    s = story(turn(1, "hi"))
    assert json_equal(decode(b"\xef\xbb\xbf" + encode(s).encode()), s)


def test_a_json_body_is_parsed_and_text_kept_as_text():
    text = FRONT + block({"id": 1, "src": "u"}, "[1, 2.5, 18446744073709551616]", message_encoding="json")
    text += block({"id": 2, "src": "u"}, "[1]")
    msgs = [t["msg"] for t in decode(text)["turns"]]
    assert json_equal(msgs, [[1, 2.5, 18446744073709551616], "[1]"])


def test_unquoted_yaml_dates_stay_text():
    text = FRONT.replace("  session: s\n", "  session: s\n  started_at: 2026-01-01T00:00:00Z\n")
    assert decode(text)["started_at"] == "2026-01-01T00:00:00Z"


def test_native_residuals_are_captured_at_their_pointers():
    # The reference's own test input (agenticmd_captures_and_restores_native_unknown_fields…).
    text = (
        "---\nformat: persisting\nstoryline:\n  schema_version: storyline/v1\n  session: s\n  agent:\n    id: a\n"
        "vendor_top: 7\na/b~c: [x]\n---\n\n"
        f'{MARKER}:user {{"type":"text","length":2,"source":"user","step_id":1,"message_encoding":"text",'
        '"storyline":{"id":1,"src":"user"},"vendor_header":null} -->\n\nhi\n'
    )
    s = decode(text)
    own = s["unknown_fields"]["sources"]["agenticmd"]
    assert own["fields"] == {
        "/frontmatter/vendor_top": 7,
        "/frontmatter/a~1b~0c": ["x"],
        "/blocks/0/header/vendor_header": None,
    }
    assert s["unknown_key_counts"] == {
        "agenticmd": {"/blocks/*/header/vendor_header": 1, "/frontmatter/a~1b~0c": 1, "/frontmatter/vendor_top": 1}
    }
    logical = {
        "format": "agenticmd",
        "frontmatter_format": "persisting",
        "frontmatter": {"format": "persisting", "vendor_top": 7, "a/b~c": ["x"]},
        "blocks": [
            {
                "header": {
                    "type": "text",
                    "length": 2,
                    "source": "user",
                    "step_id": 1,
                    "message_encoding": "text",
                    "storyline": {"id": 1, "src": "user"},
                    "vendor_header": None,
                },
                "body": "hi",
            }
        ],
    }
    assert own["source_document_id"] == canonical_hash(logical)
    # Written back where they were read …
    again = encode(s)
    assert "\nvendor_top: 7\n" in again and "\na/b~c:\n- x\n" in again
    assert '"vendor_header":null' in again.splitlines()[again.splitlines().index("---", 1) + 2]
    # … so the file's logical document, and its id, stay the same.
    assert json_equal(decode(again), s)


def test_session_and_agent_keys_of_the_frontmatter_are_in_the_document_id():
    base = FRONT + block({"id": 1, "src": "u"}, "x", length=1)
    with_session = base.replace("format: persisting\n", "format: persisting\nsession_id: run-1\n")
    read = decode(with_session)["unknown_fields"]["sources"]["agenticmd"]["source_document_id"]
    doc = agenticmd.parse_document(with_session.encode())
    logical = {
        "format": "agenticmd",
        "frontmatter_format": "persisting",
        "session_id": "run-1",
        "frontmatter": {"format": "persisting", "session_id": "run-1"},
        "blocks": [
            {"header": {"type": "text", "length": 1, "storyline": {"id": 1, "src": "u"}, "source": "user"}, "body": "x"}
        ],
    }
    assert read == agenticmd.document_id(doc) == canonical_hash(logical)


def test_a_legacy_role_becomes_a_residual_and_speaks_for_the_block():
    text = FRONT + block({"id": 1, "src": "x"}, "hi", length=2, speaker="assistant", role="assistant", source="x")
    s = decode(text)
    assert s["unknown_fields"]["sources"]["agenticmd"]["fields"] == {"/blocks/0/header/role": "assistant"}
    assert ":agent {" in encode(s)  # the speaker comes from the role when the source is not a speaker


# --- 4. rejects ---------------------------------------------------------------------------------------


def test_the_legacy_file_has_no_storyline():
    assert problems(LEGACY.read_bytes()) == [("agenticmd.no_storyline", "/frontmatter")]
    with pytest.raises(MapcError) as info:
        decode(LEGACY.read_bytes())
    assert "missing authoritative Storyline metadata" in str(info.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("just some notes\n", [("agenticmd.no_storyline", "/frontmatter")], id="plain markdown"),
        pytest.param(
            FRONT + "plain text, no block\n", [("agenticmd.no_storyline", "/blocks/0/header")], id="one system block"
        ),
        pytest.param(
            FRONT + block({"id": 1, "src": "u"}, "x", length=1) + f"{MARKER}:user -->\n\nbare\n",
            [("agenticmd.no_storyline", "/blocks/1/header")],
            id="a block without metadata",
        ),
        pytest.param(
            FRONT.replace(
                "storyline:\n  schema_version: storyline/v1\n  session: s\n  agent:\n    id: a\n", "storyline: 7\n"
            ),
            [("agenticmd.bad_storyline", "/frontmatter/storyline")],
            id="storyline not an object",
        ),
        pytest.param(
            FRONT + block({"id": 1, "src": "u", "msg": "m"}, "x", length=1),
            [("agenticmd.bad_storyline", "/blocks/0/header/storyline/msg")],
            id="msg in the header",
        ),
        pytest.param(
            FRONT.replace("    id: a\n", "    id: a\n  turns: []\n"),
            [("agenticmd.bad_storyline", "/frontmatter/storyline/turns")],
            id="turns in the frontmatter",
        ),
        pytest.param(
            FRONT.replace(
                "    id: a\n",
                "    id: a\n"
                "  unknown_fields: {sources: {agenticmd: {source_document_id: d, fields: {/frontmatter/x: 1}}}}\n"
                "  unknown_key_counts: {agenticmd: {/frontmatter/x: 1}}\n",
            ),
            [("agenticmd.bad_storyline", "/frontmatter/storyline/unknown_fields/sources/agenticmd")],
            id="own residuals in the frontmatter",
        ),
        pytest.param(
            FRONT.replace("session: s", "session: ''"),
            [("schema.minLength", "/frontmatter/storyline/session")],
            id="an invalid Storyline root",
        ),
        pytest.param(
            FRONT.replace(
                "    id: a\n",
                "    id: a\n  unknown_fields: {sources: {atif: {source_document_id: d, fields: {/x: 1}}}}\n",
            ),
            [("storyline.unknown_key_counts_mismatch", "/frontmatter/storyline")],
            id="counts missing",
        ),
        pytest.param(
            FRONT + block({"id": 1, "src": "u"}, "x", length=1) + block({"id": 1, "src": "u"}, "y", length=1),
            [("storyline.duplicate_turn_id", "/blocks/1/header/storyline/id")],
            id="a turn id twice",
        ),
        pytest.param(
            FRONT + block({"id": 1.0, "src": "u"}, "x", length=1),
            [("schema.type", "/blocks/0/header/storyline/id")],
            id="an invalid turn",
        ),
        pytest.param(
            FRONT + block({"id": 1, "src": "u"}, "{", length=1, message_encoding="json"),
            [("agenticmd.bad_block", "/blocks/0/body")],
            id="a JSON body that is not JSON",
        ),
        pytest.param(
            FRONT + block({"id": 1, "src": "u"}, "x", length=50),
            [("agenticmd.bad_block", "/blocks/0/header/length")],
            id="a length past the end",
        ),
        pytest.param(
            FRONT + block({"id": 1, "src": "u"}, "é", length=1),
            [("agenticmd.bad_block", "/blocks/0/header/length")],
            id="a length inside a character",
        ),
        pytest.param(
            FRONT + block({"id": 1, "src": "u"}, "xyz", length=1),
            [("agenticmd.bad_block", "/blocks/1")],
            id="a length too short leaves text between blocks",
        ),
        pytest.param(
            FRONT + block({"id": 1, "src": "u"}, "x", length=-1),
            [("agenticmd.bad_block", "/blocks/0/header/length")],
            id="a negative length",
        ),
        pytest.param(
            FRONT + f'{MARKER}:user {{"type":"text", -->\n\nx\n',
            [("agenticmd.bad_block", "/blocks/0/header")],
            id="a header that is not JSON",
        ),
        pytest.param(
            FRONT + f'{MARKER}:user {{"type":"text"}}\n\nx\n',
            [("agenticmd.bad_block", "/blocks/0/header")],
            id="an unclosed comment",
        ),
        pytest.param("---\nformat: persisting\nstoryline: {\n", [("agenticmd.yaml", "/frontmatter")], id="unclosed"),
        pytest.param("---\nformat: [\n---\n\n", [("agenticmd.yaml", "/frontmatter")], id="bad YAML"),
        pytest.param("---\n- a\n---\n\n", [("agenticmd.yaml", "/frontmatter")], id="YAML not a mapping"),
        pytest.param("---\nx: .nan\n---\n", [("agenticmd.yaml", "/frontmatter/x")], id="NaN"),
        pytest.param("---\nx: !!binary aGk=\n---\n", [("agenticmd.yaml", "/frontmatter/x")], id="binary"),
        pytest.param("---\nx: {1: a}\n---\n", [("agenticmd.yaml", "/frontmatter/x")], id="a number key"),
        pytest.param(b"---\nx: \xff\n---\n", [("agenticmd.not_utf8", "")], id="not UTF-8"),
    ],
)
def test_rejects(text, expected):
    assert problems(text) == expected


# --- 5. writing ---------------------------------------------------------------------------------------


def _with_own(doc: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for p in fields:
        key = re.sub(r"^/blocks/(0|[1-9][0-9]*)/", "/blocks/*/", p)
        counts[key] = counts.get(key, 0) + 1
    doc["unknown_fields"] = {"sources": {"agenticmd": {"source_document_id": "d", "fields": fields}}}
    doc["unknown_key_counts"] = {"agenticmd": counts}
    return doc


@pytest.mark.parametrize(
    ("field", "code"),
    [
        ("/frontmatter/format", "residual.collision"),
        ("/frontmatter/storyline", "residual.collision"),
        ("/blocks/0/header/source", "residual.collision"),
        ("/blocks/0/header/length", "residual.collision"),
        ("/blocks/1/header/x", "residual.bad_pointer"),  # there is no second block
        ("/blocks/01/header/x", "residual.bad_pointer"),
        ("/blocks/0/body", "residual.bad_pointer"),
        ("/vendor", "residual.bad_pointer"),
        ("", "residual.bad_pointer"),
    ],
)
def test_residuals_without_a_place_are_refused(field, code):
    doc = _with_own(story(turn(1, "hi")), {field: 1})
    assert export_problems(doc) == [(code, pointer.join("/unknown_fields/sources/agenticmd/fields", field))]


def test_an_empty_own_source_is_kept_as_it_is():
    doc = story(turn(1, "hi"), unknown_fields={"sources": {"agenticmd": {"source_document_id": "d", "fields": {}}}})
    assert json_equal(decode(encode(doc)), doc)


# --- 6. detection (docs/formats.md, Detection) --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "data", "fmt"),
    [
        ("run.md", b"{}", "agenticmd"),  # the path decides first
        ("x", b"---\nformat: persisting\nstoryline: {}\n---\n", "agenticmd"),
        ("x", b"  \n---\nsession: s\n  format: persisting  \n---\n", "agenticmd"),
        ("x", b'notes\n<!-- persisting:block:user {"type":"text"} -->\nhi\n', "agenticmd"),
        ("x", b"---\nformat: persisting:1.0\n---\n", None),  # the line must be exactly that
        ("x", b"# just markdown\n", None),
        # JSON that holds the marker in a string stays JSON (and is ATIF here).
        ("x", orjson.dumps({"schema_version": "ATIF-v1.7", "steps": [{"message": MARKER}]}), "atif"),
    ],
)
def test_detection(path, data, fmt):
    from mapc.engine import detect

    assert detect.detect(path, data) == fmt


def test_the_legacy_file_is_detected_but_not_read():
    from mapc.engine import detect

    assert detect.by_content(LEGACY.read_bytes()) == "agenticmd"


def test_yaml_that_would_not_read_back_is_written_quoted(monkeypatch):
    calls = []

    def first_reading_differs(a: Any, b: Any) -> bool:
        calls.append(1)
        return len(calls) > 1 and json_equal(a, b)

    monkeypatch.setattr(agenticmd, "json_equal", first_reading_differs)
    s = story(turn(1, "hi"), notes="日本 \x85 x", extra={"k": [1.5, None, True]})
    text = encode(s)
    assert '  "notes": "\\u65E5\\u672C \\N x"\n' in text  # every scalar double-quoted, with escapes
    monkeypatch.undo()
    assert json_equal(decode(text), s)
