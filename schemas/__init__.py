"""JSON Schemas shipped with mapc (storyline/v1, format inputs, mapping specs)."""
