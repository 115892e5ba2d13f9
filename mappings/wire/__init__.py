"""Wire-protocol tables: how an LLM API's request and response bodies become Storyline turns.

Each ``NAME.yaml`` here is data read by the generic projector in ``mapc.store.wire``; see there.
"""
