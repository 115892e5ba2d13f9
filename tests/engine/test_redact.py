"""Redaction (engine/redact.py, `--redact`): what is replaced, where, and that it is reported."""

from __future__ import annotations

import json
from collections import Counter

import orjson
import pytest
from conftest import SECRET_CHAT

import mapc
from mapc.engine.redact import Redactor, summary


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("key sk-ant-api03-abcdefghijklmnopqrstu end", "key [REDACTED:api_key] end"),
        ("Authorization: Bearer eyJhbGciOi.payload.sig", "Authorization: Bearer [REDACTED:bearer_token]"),
        ("curl -H 'X-Api-Key: abc123secret'", "curl -H 'X-Api-Key: [REDACTED:auth_header]'"),
        ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "token [REDACTED:api_key]"),
        ("a plain sentence about keys and bearers", "a plain sentence about keys and bearers"),
    ],
)
def test_shipped_patterns(text: str, want: str) -> None:
    counts: Counter[str] = Counter()
    assert Redactor.of().text(text, counts) == want
    assert sum(counts.values()) == (text != want)


def test_storyline_text_and_residuals_are_redacted_and_counted() -> None:
    stories = mapc.into_storyline("openai-chat", orjson.dumps(SECRET_CHAT))
    out, counts = Redactor.of().stories(stories)
    text = json.dumps(out)
    for secret in ("sk-proj-abcdefghijklmnopqrstuvwx", "AKIAABCDEFGHIJKLMNOP", "abc.def.ghi12345", "hunter2hunter2"):
        assert secret in json.dumps(stories) and secret not in text
    assert counts["api_key"] == 2 and counts["bearer_token"] >= 1 and counts["auth_header"] >= 1
    assert out[0]["turns"][-1]["msg"] == "Done; nothing secret here."
    assert stories[0]["turns"][0]["msg"].startswith("Use the key sk-")  # the input is not changed
    assert mapc.from_storyline("openai-chat", out)  # still a valid Storyline and export


def test_user_patterns_and_bad_ones() -> None:
    counts: Counter[str] = Counter()
    assert Redactor.of([r"secret-\d+"], defaults=False).text("a secret-42 b", counts) == "a [REDACTED:user1] b"
    assert summary(counts) == "redacted 1 value: user1=1"
    with pytest.raises(ValueError, match="not a regular expression"):
        Redactor.of(["("])


def test_values_under_credential_keys_are_replaced_whole_and_shapes_kept() -> None:
    counts: Counter[str] = Counter()
    doc = {"headers": {"Authorization": "anything at all", "X-Api-Key": "k", "Accept": "json"}, "n": 3, "api_key": None}
    assert Redactor.of().value(doc, counts) == {
        "headers": {"Authorization": "[REDACTED:secret_key]", "X-Api-Key": "[REDACTED:secret_key]", "Accept": "json"},
        "n": 3,
        "api_key": None,
    }
    assert counts == Counter(secret_key=2)


def test_redaction_is_idempotent() -> None:
    r = Redactor.of([r"ticket-\d+"])
    text = "Authorization: Basic dXNlcjpwYXNzd29yZA== sk-ant-api03-abcdefghijklmnopqrstu ticket-7 Bearer abcdefghij"
    once = r.text(text, Counter())
    assert "dXNlcjpw" not in once and "sk-ant" not in once and "ticket-7" not in once and "abcdefghij" not in once
    assert r.text(once, Counter()) == once
    assert r.text("a basic understanding", Counter()) == "a basic understanding"
