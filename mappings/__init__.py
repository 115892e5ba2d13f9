"""Format specs (YAML) and the few named functions they call."""
