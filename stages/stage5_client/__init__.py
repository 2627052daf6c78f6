"""Stage 5: the client library (chapter, demo and tests)."""
