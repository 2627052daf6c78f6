"""SimpleKafka: a Kafka-like broker built in stages, that real Kafka clients can use."""

__version__ = "0.1.0"
