"""The `document_id` of each Storyline a file gives the store (issue 15 §6): its own identity.

A document is named by its ``trajectory`` when it has one; else by its ``session`` when no other
Storyline of the same file has that session (the id every earlier mapc gave it, so datasets
written before read and compare the same); else — continuation segments of one run sharing a
session, or subagents sharing their parent's, without trajectory ids — by the session and its
1-based position among the file's Storylines, ``SESSION#K``.

Segments in *different* files of one `mapc store` job can share a session too (a run written one
file per segment): a file cannot see the others, so the job's driver (store/ingest.py) finds the
sessions two files would both take as an id and has those files stored again with the position
qualified by the file's relative path, ``SESSION#PATH#K``, for every file holding that session
(whatever the order the files were read in).  Readers accept every form (`is_session_id`).
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


def file_document_ids(
    stories: Sequence[dict[str, Any]], path: str | None = None, qualify: frozenset[str] = frozenset()
) -> list[str]:
    """The `document_id` of each of one file's Storylines, in order (see the module docstring):
    the Storylines without a trajectory whose session is in `qualify` (sessions other files of the
    job hold too) are named with the file's relative `path` and their position."""
    shared = Counter(s["session"] for s in stories if not _explicit(s))
    out = []
    for k, story in enumerate(stories, start=1):
        session = story["session"]
        if _explicit(story):
            out.append(document_id(story))
        elif session in qualify and path:
            out.append(f"{session}{SEPARATOR}{path}{SEPARATOR}{k}")
        elif shared[session] == 1:
            out.append(session)
        else:
            out.append(f"{session}{SEPARATOR}{k}")
    return out


def by_session(stories: Sequence[dict[str, Any]], ids: Sequence[str]) -> tuple[str, ...]:
    """The ids of `ids` that are their Storyline's bare session (no trajectory, alone in its file):
    the ones another file of the job could take too."""
    return tuple(i for s, i in zip(stories, ids, strict=True) if not _explicit(s) and i == s["session"])


def is_session_id(doc_id: str, session: str) -> bool:
    """Whether `doc_id` is one the store gives a document of `session` without a trajectory: the
    session itself, or the session and a position (``SESSION#K``), or the session, the file's
    relative path and a position (``SESSION#PATH#K``)."""
    if doc_id == session:
        return True
    head, sep, tail = doc_id.rpartition(SEPARATOR)
    if not (sep and tail.isdigit() and not tail.startswith("0")):
        return False
    return head == session or (head.startswith(session + SEPARATOR) and len(head) > len(session) + 1)
