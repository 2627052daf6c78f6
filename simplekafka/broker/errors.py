"""The broker's one exception type: a Kafka error code with a reason for the log."""

from __future__ import annotations

from simplekafka.protocol.errors import ErrorCode


class KafkaError(Exception):
    """Raised inside request handling; the handler turns it into ``code`` on the wire."""

    def __init__(self, code: int, message: str = ""):
        self.code = ErrorCode(code)
        super().__init__(message or self.code.name)

    @property
    def error_code(self) -> ErrorCode:
        """The wire code, under the name every layer's errors use."""
        return self.code
