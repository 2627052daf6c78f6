"""Stage 1: the Kafka wire protocol codec (chapter, demo and tests)."""
