"""Lance storage: Storyline corpora in three tables, and the events.lance source of truth."""
