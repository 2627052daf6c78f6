"""Stage 3: the log on disk (chapter in README.md, demo in __main__.py)."""
