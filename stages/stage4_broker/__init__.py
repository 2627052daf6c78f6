"""Stage 4: the Twisted broker that real Kafka clients use."""
