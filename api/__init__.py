"""mapc: convert, validate and store AI-agent trajectories through the Storyline hub."""

__version__ = "0.1.0"
