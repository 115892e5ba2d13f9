"""engine/codecs.py: the registry of formats that are not JSON, and where the engine asks it."""

from __future__ import annotations

import dataclasses

import pytest

from mapc.engine import catalog, codecs, convert, detect
from mapc.engine.residual import normalize


def test_codecs_are_found_in_the_mappings_package():
    names = codecs.names()
    assert "agenticmd" in names
    codec = codecs.lookup("agenticmd")
    assert codec is not None and codec.source == "agenticmd" and "*.md" in codec.path_patterns
    assert codecs.lookup("atif") is None  # a spec, not a codec
    assert [c.name for c in codecs.codecs()] == names


def test_registering_is_idempotent_and_names_are_unique():
    codec = codecs.lookup("agenticmd")
    assert codecs.register(codec) is codec
    with pytest.raises(ValueError, match="already registered"):
        codecs.register(dataclasses.replace(codec, description="another"))


def test_the_engine_lists_codecs_with_the_specs():
    assert set(codecs.names()) <= set(convert.formats())
    assert detect.by_path("dir/run.md") == "agenticmd"


def test_codec_count_trees_reach_the_storyline_validator():
    trees = catalog.count_trees()
    assert trees["agenticmd"] == codecs.lookup("agenticmd").count_tree
    tree = trees["agenticmd"]
    assert normalize("/blocks/12/header/x", tree) == "/blocks/*/header/x"
    assert normalize("/blocks/012/header/x", tree) == "/blocks/012/header/x"  # strict: no leading zero
    assert normalize("/frontmatter/0", tree) == "/frontmatter/0"
