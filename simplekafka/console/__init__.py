"""The console: an admin REST API (with its OpenAPI document) and a live web page.

One process, started with ``simplekafka console --bootstrap-server HOST:PORT``,
that talks to the cluster only through the Kafka protocol.
"""

from simplekafka.console.service import ApiError, ConsoleService

__all__ = ["ApiError", "ConsoleService"]
