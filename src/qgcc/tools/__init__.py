"""Developer tools that may use the whole pipeline, front end included (e.g. the docs' generators)."""
