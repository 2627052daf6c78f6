"""Stage 1: the Kafka wire protocol, sans-I/O.

Bytes in, objects out; objects in, bytes out; no sockets. The broker, the
client, the dissector and the tests all share this codec.
"""

from simplekafka.protocol.errors import CorruptBatchError, ErrorCode, ProtocolError

__all__ = ["CorruptBatchError", "ErrorCode", "ProtocolError"]
