"""Stage 6: Producer, Consumer, Admin and the CLI (chapter, demo and tests)."""
