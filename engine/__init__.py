"""The mapping engine: pointers, problems, specs, compilation and the Storyline hub rules."""
