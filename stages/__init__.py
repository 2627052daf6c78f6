"""The stages of the SimpleKafka tutorial: one package each, with its chapter, demo and tests."""
