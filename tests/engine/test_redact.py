"""engine/redact.py: secrets replaced in JSON values, shapes kept, user patterns added."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import json_values

from mapc.engine.redact import MARK, PatternError, redactor

SECRETS = [
    "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
    "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
    "AKIAABCDEFGHIJKLMNOP",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "xoxb-1234567890-abcdefghij",
    "AIzaSyA-abcdefghijklmnopqrstuvwxyz01234",
    "hf_abcdefghijklmnopqrstuvwxyz",
]


@pytest.mark.parametrize("secret", SECRETS)
def test_provider_keys_are_replaced_inside_text(secret):
    r = redactor()
    out = r.redact({"msg": f"the key is {secret}, keep it safe"})
    assert out == {"msg": f"the key is {MARK}, keep it safe"}
    assert r.count == 1


def test_bearer_tokens_and_credential_headers_keep_their_name():
    r = redactor()
    assert r.text("Authorization: Bearer abc.def-ghi_jkl") == f"Authorization: Bearer {MARK}"
    assert r.text("curl -H 'x-api-key: 12345678abcd' url") == f"curl -H 'x-api-key: {MARK}' url"
    assert r.text('{"password": "hunter2hunter2"}') == f'{{"password": "{MARK}"}}'
    assert r.text("API_KEY=abcd1234efgh") == f"API_KEY={MARK}"
    assert r.text("no secret here, a token of esteem") == "no secret here, a token of esteem"


def test_values_under_credential_keys_are_replaced_whole_and_shapes_kept():
    r = redactor()
    doc = {"headers": {"Authorization": "anything at all", "X-Api-Key": "k", "Accept": "json"}, "n": 3, "api_key": None}
    assert r.redact(doc) == {
        "headers": {"Authorization": MARK, "X-Api-Key": MARK, "Accept": "json"},
        "n": 3,
        "api_key": None,
    }


def test_user_patterns_and_bad_ones():
    r = redactor([r"ticket-\d+"])
    assert r.text("see ticket-42 and ticket-7") == f"see {MARK} and {MARK}"
    assert redactor([r"x"], builtin=False).text("sk-abcdefghijklmnopqrstuv x") == f"sk-abcdefghijklmnopqrstuv {MARK}"
    with pytest.raises(PatternError, match="ticket-"):
        redactor(["ticket-("])


def _shape(value):
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return type(value).__name__


@given(json_values(), st.sampled_from(SECRETS))
def test_redaction_is_idempotent_keeps_the_shape_and_leaves_no_secret(value, secret):
    r = redactor()
    doc = {"v": value, "leak": f"x {secret} y", "deep": [{"s": secret}]}
    once = r.redact(doc)
    assert r.redact(once) == once
    assert _shape(once) == _shape(doc)
    assert secret not in repr(once)


def test_basic_credentials_in_an_authorization_header():
    assert redactor().text("Authorization: Basic dXNlcjpwYXNzd29yZA==") == f"Authorization: Basic {MARK}"
    assert redactor().text("a basic understanding") == "a basic understanding"
