"""Known keys are never reported as unknown (issue 15 §7).

In A → Storyline, `unknown_fields.sources.A` holds only keys A does not define; a value of a key A
defines that no Storyline field says (an explicit null, a key read only under a condition, ACTF's
OpenAI-style `function` wrapper, an OpenAI `refusal` that became the message) is provenance, kept
in `origin.kept` (engine/known.py), and A → Storyline → A is still exact.

The oracle here is written apart from engine/known.py: the keys a format defines at a place are the
properties its JSON Schema declares there (walked over `$ref`, `*Of`, `items`, `additionalProperties`),
the spec's known keys (`objects:`) and its conditionally read keys (`consume:`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from actf_strategies import actf_documents
from atif_strategies import atif_documents
from conftest import FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai_strategies import corpora

import mapc
from mapc.engine import convert, pointer
from mapc.engine.template import Var
from mapc.engine.values import json_equal

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _deref(schema: Any, root: dict[str, Any]) -> Any:
    while type(schema) is dict and "$ref" in schema:
        schema = pointer.resolve(root, pointer.parse(schema["$ref"][1:]))
    return schema


def _branches(schema: Any, root: dict[str, Any]) -> list[dict[str, Any]]:
    schema = _deref(schema, root)
    if type(schema) is not dict:
        return []
    out = [schema]
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in schema.get(key, []):
            out += _branches(sub, root)
    for key in ("then", "else"):
        if key in schema:
            out += _branches(schema[key], root)
    return out


def _below(schemas: list[dict[str, Any]], token: str, root: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for s in schemas:
        props = s.get("properties") or {}
        if token in props:
            out += _branches(props[token], root)
        elif type(s.get("additionalProperties")) is dict:
            out += _branches(s["additionalProperties"], root)
        for pattern, sub in (s.get("patternProperties") or {}).items():
            if re.search(pattern, token):
                out += _branches(sub, root)
        if token.isdigit() and type(s.get("items")) is dict:
            out += _branches(s["items"], root)
    return out


def _schema_declares(root: dict[str, Any], tokens: list[str]) -> bool:
    here = _branches(root, root)
    for token in tokens[:-1]:
        here = _below(here, token, root)
    return any(tokens[-1] in (s.get("properties") or {}) for s in here)


def _fits(template: Any, tokens: list[str]) -> bool:
    return len(template.tokens) == len(tokens) and all(
        isinstance(t, Var) or t == u for t, u in zip(template.tokens, tokens, strict=True)
    )


def defined_keys(fmt: str, ptr: str) -> bool:
    """Whether `ptr` ends in a key format `fmt` defines at that place (an array item is no key)."""
    tokens = pointer.parse(ptr)
    if not tokens or tokens[-1].isdigit():
        return False
    spec = convert.program_for(fmt).spec
    if any((tokens[-1] in keys or "*" in keys) and _fits(t, tokens[:-1]) for t, keys, _ in spec.objects) or any(
        _fits(c.at, tokens) for c in (spec.rows.consume if spec.rows else ())
    ):
        return True
    if spec.input_schema is None:
        return False
    root = json.loads((SCHEMAS / f"{spec.input_schema}.schema.json").read_text())
    return _schema_declares(root, tokens)


def _known_as_unknown(fmt: str, data: bytes, path: str = "doc.json") -> list[str]:
    source = convert.program_for(fmt).spec.source
    stories = mapc.into_storyline(fmt, data, path=path)
    return [
        p
        for s in stories
        for p in (((s.get("unknown_fields") or {}).get("sources") or {}).get(source) or {}).get("fields", {})
        if defined_keys(fmt, p)
    ]


def _same_format_round_trip(fmt: str, data: bytes, path: str = "doc.json") -> None:
    stories = mapc.into_storyline(fmt, data, path=path)
    once = mapc.from_storyline(fmt, stories)
    again = mapc.from_storyline(fmt, mapc.into_storyline(fmt, orjson.dumps(once), path=path))
    assert json_equal(json.loads(orjson.dumps(again)), json.loads(orjson.dumps(once)))


@pytest.mark.parametrize(
    "path", sorted(p for f in ("atif", "actf", "openai-msg") for p in (FIXTURES / f).glob("*.json")), ids=str
)
def test_no_fixture_reports_a_key_its_format_defines_as_unknown(path):
    assert _known_as_unknown(path.parent.name, path.read_bytes(), path.name) == []


@SETTINGS
@given(atif_documents(max_depth=2))
def test_no_generated_atif_reports_a_key_atif_defines_as_unknown(doc):
    data = orjson.dumps(doc)
    assert _known_as_unknown("atif", data) == []
    _same_format_round_trip("atif", data)


@SETTINGS
@given(actf_documents(max_attempts=2, max_steps=3))
def test_no_generated_actf_reports_a_key_actf_defines_as_unknown(doc):
    data = orjson.dumps(doc)
    assert _known_as_unknown("actf", data) == []
    _same_format_round_trip("actf", data)


@SETTINGS
@given(corpora())
def test_no_generated_openai_corpus_reports_a_key_openai_defines_as_unknown(drawn):
    data = orjson.dumps(drawn[0])
    assert _known_as_unknown("openai-msg", data) == []
    _same_format_round_trip("openai-msg", data)


def _tool_step(tool: dict[str, Any]) -> dict[str, Any]:
    """The code-repair fixture with its first step's tool (and observation) replaced by `tool`."""
    doc = json.loads((FIXTURES / "actf" / "code-repair.actf.json").read_bytes())
    step = doc["attempts"]["1"]["trajectory"]["steps"][0]
    step["tools"] = step["assistant_content"]["tool_calls"] = [tool]
    step["observation"] = [{"tool_use_id": tool["id"], "type": "tool_result", "content": "ok"}]
    return doc


def test_actf_function_wrapper_is_provenance_and_comes_back():
    tool = {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": '{"q": 1}'}}
    doc = _tool_step(tool)
    [story] = mapc.into_storyline("actf", orjson.dumps(doc))
    assert "unknown_fields" not in story  # before: /attempts/1/trajectory/steps/0/tools/0/function
    assert "/attempts/1/trajectory/steps/0/tools/0/function" in story["origin"]["kept"]["fields"]
    call = story["turns"][0]["tool_calls"][0]
    assert (call["fn"], call["args"]) == ("grep", '{"q": 1}')
    assert json_equal(mapc.from_storyline("actf", [story]), mapc.from_storyline("actf", [story], carry=False))
    back = mapc.from_storyline("actf", [story])
    assert back["attempts"]["1"]["trajectory"]["steps"][0]["tools"][0]["function"] == tool["function"]
    # through ATIF and back: carried for ACTF (reported as carried, not as unknown)
    atif, report = mapc.convert_reported("actf", "atif", orjson.dumps(doc))
    wrapper = "/attempts/1/trajectory/steps/0/tools/0/function"
    assert any(c.source == "actf" and wrapper.startswith(c.pointer) for c in report.carried)
    home = mapc.convert("atif", "actf", orjson.dumps(atif))
    assert home["attempts"]["1"]["trajectory"]["steps"][0]["tools"][0]["function"] == tool["function"]


def test_openai_refusal_that_became_the_message_is_provenance():
    row = {
        "session_id": "s",
        "step_id": 1,
        "messages": [{"role": "user", "content": "do it"}],
        "response": {"role": "assistant", "content": None, "refusal": "I can't"},
    }
    data = orjson.dumps({"session_steps": [row]})
    [story] = mapc.into_storyline("openai-msg", data, path="r.json")
    assert story["turns"][-1]["msg"] == "I can't"
    assert "openai-msg" not in ((story.get("unknown_fields") or {}).get("sources") or {})
    assert any(p.endswith("/refusal") for p in story["origin"]["kept"]["fields"])
    assert mapc.from_storyline("openai-msg", [story])["session_steps"][0]["response"]["refusal"] == "I can't"


@given(st.just(None))
def test_the_schema_walk_sees_the_keys_the_formats_define(_):
    assert defined_keys("atif", "/steps/0/tool_calls/0/function_name")
    assert defined_keys("actf", "/attempts/a/trajectory/steps/0/tools/0/function")
    assert defined_keys("openai-msg", "/session_steps/0/response/refusal")
    assert not defined_keys("atif", "/steps/0/x_unknown")
    assert not defined_keys("actf", "/attempts/a/trajectory/steps/0/tools/0")
