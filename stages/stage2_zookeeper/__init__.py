"""Stage 2: ZooKeeper coordination (chapter in README.md, demo in __main__.py)."""
