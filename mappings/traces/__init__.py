"""Span-tree specs (`document: {spans: …}`, engine/spans.py): trace formats, run as codecs."""
