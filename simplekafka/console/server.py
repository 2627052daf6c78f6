"""The console's HTTP server: the REST API under ``/api``, the web page at ``/``.

Built on ``twisted.web``, which the broker already depends on, so the console
adds no web framework. The Kafka calls block (our clients wait on futures), so
each API request runs in the reactor's thread pool and its answer is written
back on the reactor thread. The web page is static files in this package,
polling ``/api/overview`` once a second; ``/metrics`` has consumer group lag for
Prometheus; the API page (Swagger UI) is served
from the ``swagger-ui-bundle`` wheel's files, so nothing comes from the internet.
"""

from __future__ import annotations

import json
import mimetypes
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol, overload
from urllib.parse import unquote

from twisted.internet import reactor as installed_reactor
from twisted.internet import threads
from twisted.internet.defer import Deferred
from twisted.python import log
from twisted.python.failure import Failure
from twisted.web import resource, server

from simplekafka.console import metrics, openapi
from simplekafka.console.service import (
    DEFAULT_RECORDS_LIMIT,
    MAX_PARTITIONS,
    MAX_RECORDS_LIMIT,
    ApiError,
    ConsoleService,
    bad_request,
)
from simplekafka.json_values import JsonValue

STATIC_DIR = Path(__file__).parent / "static"
MAX_CONTAINS = 1000
MAX_BODY_BYTES = 4 * 1024 * 1024
#: A route handler's answer: the status and a JSON-ready value (dicts, lists, TypedDicts).
Answer = tuple[int, object]
Handler = Callable[..., Answer]


class WebRequest(Protocol):
    """What the console uses of ``twisted.web.server.Request`` (whose ``args`` and
    ``content`` are declared ``None`` until the request is parsed)."""

    path: bytes
    method: bytes
    args: dict[bytes, list[bytes]]
    content: IO[bytes]

    def setHeader(self, name: bytes, value: bytes) -> None: ...
    def setResponseCode(self, code: int, message: bytes | None = None) -> None: ...
    def write(self, data: bytes) -> None: ...
    def finish(self) -> None: ...
    def notifyFinish(self) -> Deferred[None]: ...


@dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    handler: str  # name of a ConsoleApp method
    has_body: bool = False


def _route(method: str, template: str, handler: str, has_body: bool = False) -> Route:
    regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", template)
    return Route(method, re.compile(f"^{regex}$"), handler, has_body)


ROUTES = [
    _route("GET", "/api/cluster", "get_cluster"),
    _route("GET", "/api/overview", "get_overview"),
    _route("GET", "/api/topics", "list_topics"),
    _route("POST", "/api/topics", "create_topic", has_body=True),
    _route("GET", "/api/topics/{name}", "get_topic"),
    _route("DELETE", "/api/topics/{name}", "delete_topic"),
    _route("GET", "/api/topics/{name}/configs", "get_topic_configs"),
    _route("PATCH", "/api/topics/{name}/configs", "alter_topic_configs", has_body=True),
    _route("GET", "/api/topics/{name}/records", "get_records"),
    _route("POST", "/api/topics/{name}/records", "produce", has_body=True),
    _route("GET", "/api/groups", "list_groups"),
    _route("GET", "/api/groups/{group_id}", "get_group"),
    _route("DELETE", "/api/groups/{group_id}", "delete_group"),
    _route("POST", "/api/groups/{group_id}/offsets/reset", "reset_offsets", has_body=True),
    _route("POST", "/api/leader-election", "elect_leaders", has_body=True),
    _route("GET", "/api/brokers", "list_brokers"),
    _route("GET", "/api/brokers/{broker_id}/configs", "get_broker_configs"),
    _route("PATCH", "/api/brokers/{broker_id}/configs", "alter_broker_configs", has_body=True),
    _route("GET", "/api/acls", "list_acls"),
    _route("POST", "/api/acls", "create_acl", has_body=True),
    _route("DELETE", "/api/acls", "delete_acls", has_body=True),
    _route("GET", "/api/users", "list_users"),
    _route("PUT", "/api/users/{user}", "put_user", has_body=True),
    _route("DELETE", "/api/users/{user}", "delete_user"),
    _route("GET", "/api/metrics/throughput", "get_throughput"),
    _route("GET", "/api/openapi.json", "get_openapi"),
]


@overload
def query_int(args: dict[bytes, list[bytes]], name: str, default: int, low: int,
              high: int) -> int: ...
@overload
def query_int(args: dict[bytes, list[bytes]], name: str, default: None, low: int,
              high: int) -> int | None: ...
def query_int(args: dict[bytes, list[bytes]], name: str, default: int | None,
              low: int, high: int) -> int | None:
    """An integer query parameter within [low, high], or a 400 naming it."""
    values = args.get(name.encode())
    if not values:
        return default
    text = values[-1].decode("utf-8", "replace")
    try:
        value = int(text)
    except ValueError:
        raise bad_request(f"{name} must be an integer, not {text!r}") from None
    if not low <= value <= high:
        raise bad_request(f"{name} must be between {low} and {high}, not {value}")
    return value


def query_text(args: dict[bytes, list[bytes]], name: str) -> str | None:
    """A text query parameter (the last if repeated), or None; 400 if not UTF-8."""
    values = args.get(name.encode())
    if not values:
        return None
    try:
        return values[-1].decode("utf-8")
    except UnicodeDecodeError:
        raise bad_request(f"{name} is not UTF-8") from None


class ConsoleApp:
    """Route handlers: each returns (status, JSON value) and runs in a worker thread."""

    def __init__(self, service: ConsoleService) -> None:
        self.service = service

    def get_cluster(self, request: WebRequest) -> Answer:
        return 200, self.service.cluster()

    def get_overview(self, request: WebRequest) -> Answer:
        return 200, self.service.overview()

    def list_topics(self, request: WebRequest) -> Answer:
        return 200, self.service.list_topics()

    def create_topic(self, request: WebRequest, body: JsonValue) -> Answer:
        return 201, self.service.create_topic(body)

    def get_topic(self, request: WebRequest, name: str) -> Answer:
        return 200, self.service.topic(name)

    def delete_topic(self, request: WebRequest, name: str) -> Answer:
        self.service.delete_topic(name)
        return 204, None

    def get_topic_configs(self, request: WebRequest, name: str) -> Answer:
        return 200, self.service.topic_configs(name)

    def alter_topic_configs(self, request: WebRequest, body: JsonValue, name: str) -> Answer:
        return 200, self.service.alter_topic_configs(name, body)

    def get_records(self, request: WebRequest, name: str) -> Answer:
        args = request.args
        partition = (None if query_text(args, "partition") in (None, "all")
                     else query_int(args, "partition", None, 0, MAX_PARTITIONS))
        offset = query_int(args, "offset", None, 0, 2**63 - 1)
        limit = query_int(args, "limit", DEFAULT_RECORDS_LIMIT, 1, MAX_RECORDS_LIMIT)
        since_ms = query_int(args, "since_ms", None, 0, 2**63 - 1)
        until_ms = query_int(args, "until_ms", None, 0, 2**63 - 1)
        contains = query_text(args, "contains")
        if contains is not None and not 1 <= len(contains) <= MAX_CONTAINS:
            raise bad_request(f"contains is 1 to {MAX_CONTAINS} characters")
        return 200, self.service.records(name, partition, offset, limit, since_ms, until_ms,
                                         contains)

    def produce(self, request: WebRequest, body: JsonValue, name: str) -> Answer:
        return 200, self.service.produce(name, body)

    def list_groups(self, request: WebRequest) -> Answer:
        return 200, self.service.list_groups()

    def get_group(self, request: WebRequest, group_id: str) -> Answer:
        return 200, self.service.group(group_id)

    def delete_group(self, request: WebRequest, group_id: str) -> Answer:
        self.service.delete_group(group_id)
        return 204, None

    def reset_offsets(self, request: WebRequest, body: JsonValue, group_id: str) -> Answer:
        return 200, self.service.reset_offsets(group_id, body)

    def elect_leaders(self, request: WebRequest, body: JsonValue) -> Answer:
        return 200, self.service.elect_leaders(body)

    def list_brokers(self, request: WebRequest) -> Answer:
        return 200, self.service.brokers()

    def get_broker_configs(self, request: WebRequest, broker_id: str) -> Answer:
        return 200, self.service.broker_configs(broker_id)

    def alter_broker_configs(self, request: WebRequest, body: JsonValue, broker_id: str) -> Answer:
        return 200, self.service.alter_broker_configs(broker_id, body)

    def list_acls(self, request: WebRequest) -> Answer:
        query = {}
        for key in request.args:
            name = key.decode("utf-8", "replace")
            query[name] = query_text(request.args, name)
        return 200, self.service.list_acls(query)

    def create_acl(self, request: WebRequest, body: JsonValue) -> Answer:
        return 201, self.service.create_acl(body)

    def delete_acls(self, request: WebRequest, body: JsonValue) -> Answer:
        return 200, self.service.delete_acls(body)

    def list_users(self, request: WebRequest) -> Answer:
        return 200, self.service.list_users()

    def put_user(self, request: WebRequest, body: JsonValue, user: str) -> Answer:
        return 200, self.service.put_user(user, body)

    def delete_user(self, request: WebRequest, user: str) -> Answer:
        self.service.delete_user(user, query_text(request.args, "mechanism"))
        return 204, None

    def get_throughput(self, request: WebRequest) -> Answer:
        return 200, self.service.throughput()

    def get_openapi(self, request: WebRequest) -> Answer:
        return 200, openapi.document()


def _parse_body(request: WebRequest, required: bool) -> JsonValue:
    """The JSON body; a body left out is 400 where required, else ``{}`` (unlike a JSON
    null, which the handler refuses)."""
    raw = request.content.read(MAX_BODY_BYTES + 1)
    if len(raw) > MAX_BODY_BYTES:
        raise bad_request(f"the body is larger than {MAX_BODY_BYTES} bytes")
    if not raw.strip():
        if required:
            raise bad_request("the body must be JSON")
        return {}
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        raise bad_request("the body is not valid JSON") from None


class ApiResource(resource.Resource):
    """Everything under /api: the routes, and the Swagger UI page under /api/docs."""

    isLeaf = True

    def __init__(self, app: ConsoleApp, swagger_dir: Path | None) -> None:
        super().__init__()
        self.app = app
        self.swagger_dir = swagger_dir

    def render(self, request: WebRequest) -> bytes | int:
        path = request.path.decode("latin-1")
        if path.rstrip("/") == "/api/docs" or path.startswith("/api/docs/"):
            return self._docs(request, path)
        allowed = []
        for route in ROUTES:
            match = route.pattern.match(path)
            if not match:
                continue
            allowed.append(route.method)
            if route.method == request.method.decode("latin-1"):
                params = {k: unquote(v, errors="strict") if _utf8(v) else None
                          for k, v in match.groupdict().items()}
                if None in params.values():
                    return _finish_json(request, 400, {"error": "the path is not UTF-8"})
                return self._dispatch(request, route,
                                      {k: v for k, v in params.items() if v is not None})
        if allowed:
            request.setHeader(b"allow", ", ".join(allowed).encode())
            return _finish_json(request, 405, {"error": f"use {' or '.join(allowed)}"})
        return _finish_json(request, 404, {"error": f"no such API route: {path}"})

    def _dispatch(self, request: WebRequest, route: Route, params: dict[str, str]) -> bytes | int:
        handler = getattr(self.app, route.handler)
        try:
            if route.has_body:
                body = _parse_body(request, required=route.handler != "elect_leaders")
                call = lambda: handler(request, body, **params)  # noqa: E731
            else:
                call = lambda: handler(request, **params)  # noqa: E731
        except ApiError as exc:
            return _finish_json(request, exc.status, {"error": exc.message})
        finished = [False]
        request.notifyFinish().addBoth(lambda _: finished.__setitem__(0, True))

        def answer(result: Answer) -> None:
            if not finished[0]:
                status, value = result
                request.write(_json_bytes(request, status, value))
                request.finish()

        def failed(failure: Failure) -> None:
            if finished[0]:
                return
            error = failure.value
            if isinstance(error, ApiError):
                status, message = error.status, error.message
            else:
                log.err(failure, "console: unexpected error")
                status, message = 500, f"internal error: {failure.getErrorMessage()}"
            request.write(_json_bytes(request, status, {"error": message}))
            request.finish()

        threads.deferToThread(call).addCallbacks(answer, failed)
        return server.NOT_DONE_YET

    def _docs(self, request: WebRequest, path: str) -> bytes:
        if self.swagger_dir is None:
            return _finish_json(request, 404, {"error": "swagger-ui-bundle is not installed"})
        if path.rstrip("/") == "/api/docs":
            return _static(request, STATIC_DIR / "docs.html")
        name = path[len("/api/docs/"):]
        if "/" in name or name.startswith("."):
            return _finish_json(request, 404, {"error": "no such file"})
        return _static(request, self.swagger_dir / name)


def _utf8(text: str) -> bool:
    try:
        unquote(text, errors="strict")
    except UnicodeDecodeError:
        return False
    return True


def _json_bytes(request: WebRequest, status: int, value: object) -> bytes:
    request.setResponseCode(status)
    if status == 204:
        return b""
    request.setHeader(b"content-type", b"application/json")
    request.setHeader(b"cache-control", b"no-store")
    return json.dumps(value).encode()


def _finish_json(request: WebRequest, status: int, value: object) -> bytes:
    return _json_bytes(request, status, value)


def _static(request: WebRequest, path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except OSError:
        return _finish_json(request, 404, {"error": "no such file"})
    kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    if kind.startswith("text/") or kind == "application/javascript":
        kind += "; charset=utf-8"
    request.setHeader(b"content-type", kind.encode())
    return data


class PageResource(resource.Resource):
    """The web console: index.html at /, its script and style under /static/; /metrics."""

    isLeaf = True

    def __init__(self, service: ConsoleService) -> None:
        super().__init__()
        self.service = service

    def render_GET(self, request: WebRequest) -> bytes | int:
        path = request.path.decode("latin-1")
        if path == "/metrics":
            return self._metrics(request)
        if path in ("/", "/index.html"):
            return _static(request, STATIC_DIR / "index.html")
        name = path.removeprefix("/static/")
        if name != path and "/" not in name and not name.startswith("."):
            return _static(request, STATIC_DIR / name)
        return _finish_json(request, 404, {"error": f"not found: {path}"})

    def _metrics(self, request: WebRequest) -> int:
        def answer(text: bytes) -> None:
            request.setHeader(b"content-type", metrics.CONTENT_TYPE.encode())
            request.write(text)
            request.finish()

        def failed(failure: Failure) -> None:
            request.setResponseCode(503)
            request.setHeader(b"content-type", b"text/plain; charset=utf-8")
            request.write(f"cluster unreachable: {failure.getErrorMessage()}\n".encode())
            request.finish()

        threads.deferToThread(metrics.render, self.service).addCallbacks(answer, failed)
        return server.NOT_DONE_YET


class RootResource(resource.Resource):
    """/api/... to the API, everything else to the page."""

    isLeaf = True

    def __init__(self, app: ConsoleApp, swagger_dir: Path | None) -> None:
        super().__init__()
        self.api = ApiResource(app, swagger_dir)
        self.page = PageResource(app.service)

    def render(self, request: WebRequest) -> bytes | int:
        path = request.path
        if path == b"/api" or path.startswith(b"/api/"):
            return self.api.render(request)
        return self.page.render(request)


def swagger_ui_dir() -> Path | None:
    """Where the swagger-ui-bundle wheel keeps Swagger UI's files (None if not installed)."""
    try:
        import swagger_ui_bundle
    except ImportError:
        return None
    return Path(swagger_ui_bundle.swagger_ui_path)


def make_site(service: ConsoleService) -> server.Site:
    site = server.Site(RootResource(ConsoleApp(service), swagger_ui_dir()))
    site.displayTracebacks = False
    site.noisy = False
    return site


def serve(bootstrap_servers: str, host: str = "127.0.0.1", port: int = 8080,
          on_listening: Callable[[int], None] | None = None) -> None:
    """Run the console until the reactor stops (SIGTERM or Ctrl-C)."""
    service = ConsoleService(bootstrap_servers)
    service.start_background()
    reactor: Any = installed_reactor  # whichever is installed: its interfaces are run-time facts
    reactor.suggestThreadPoolSize(16)
    listening = reactor.listenTCP(port, make_site(service), interface=host)
    if on_listening is not None:
        on_listening(listening.getHost().port)
    reactor.addSystemEventTrigger("before", "shutdown", service.close)
    reactor.run()
