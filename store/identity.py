"""The `document_id` of each Storyline a file gives the store (issue 15 §6): its own identity.

A document is named by its ``trajectory`` when it has one; else by its ``session`` when no other
Storyline of the same file has that session (the id every earlier mapc gave it, so datasets
written before read and compare the same); else — continuation segments of one run sharing a
session, or subagents sharing their parent's, without trajectory ids — by the session and its
1-based position among the file's Storylines, ``SESSION#K``.  Readers accept both forms
(`is_session_id`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from mapc.engine.views import document_id

SEPARATOR = "#"


def _explicit(story: dict[str, Any]) -> bool:
    trajectory = story.get("trajectory")
    return type(trajectory) is str and bool(trajectory)


def file_document_ids(stories: Sequence[dict[str, Any]]) -> list[str]:
    """The `document_id` of each of one file's Storylines, in order (see the module docstring)."""
    shared = Counter(s["session"] for s in stories if not _explicit(s))
    out = []
    for k, story in enumerate(stories, start=1):
        if _explicit(story) or shared[story["session"]] == 1:
            out.append(document_id(story))
        else:
            out.append(f"{story['session']}{SEPARATOR}{k}")
    return out


def is_session_id(doc_id: str, session: str) -> bool:
    """Whether `doc_id` is one the store gives a document of `session` without a trajectory: the
    session itself, or the session and a position (``SESSION#K``)."""
    if doc_id == session:
        return True
    head, sep, tail = doc_id.rpartition(SEPARATOR)
    return bool(sep) and head == session and tail.isdigit() and not tail.startswith("0")
