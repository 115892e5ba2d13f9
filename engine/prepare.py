"""Declared input preparation (`prepare:` in a spec): rewrite a variant shape into the canonical one.

Some formats accept a second shape for one part of a document (a trajectory given as a bare event
log instead of an object).  A spec names where (a pointer template), for which JSON type, and the
registered function that returns the canonical value.  It runs before the input checks; the original value
is not kept, so a spec that declares this says the variant is converted lossily.
"""

from __future__ import annotations

from typing import Any

from mapc.engine import functions
from mapc.engine.checks import collect, steps_path
from mapc.engine.problems import MapcError
from mapc.engine.template import parse_template
from mapc.engine.values import json_type, replaced


def prepare(steps: Any, doc: Any) -> Any:
    """`doc` with every declared variant replaced by its canonical form (a new document if any)."""
    for step in steps or ():
        template = parse_template(step["at"])
        fn = functions.lookup(step["call"])
        if fn is None:
            raise MapcError.single("spec.unknown_function", "", f"unknown function {step['call']!r} in prepare")
        for found, value in collect(doc, template.tokens):
            if json_type(value) == step.get("when", json_type(value)):
                doc = replaced(doc, steps_path(found), fn.fn(value))
    return doc
