"""``simplekafka inspect``: take a Kafka frame apart, field by field.

Give it a frame as hex (on stdin, inline with ``--hex``, or in a file) or as raw
bytes in a file. Requests describe themselves; a response needs ``--response
KEY VERSION`` because only the request said what it answers. ``--records``
reads a bare record set (RecordBatches, as in a log segment) instead. Exit
status 0 when everything decoded, 1 when the dissection found a bad byte (it is
shown with a caret under it), 2 for a mistake on the command line.
"""

from __future__ import annotations

import argparse
import re
import string
import sys
from pathlib import Path

from simplekafka.cli import CliError
from simplekafka.protocol.api import ApiKey, known_versions
from simplekafka.protocol.dissect import dissect_frame, dissect_records, render
from simplekafka.protocol.errors import ProtocolError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "inspect",
        help="dissect a Kafka frame: every field's offset, length, bytes and value",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument(
        "file", nargs="?", default="-",
        help="file holding the frame as hex or raw bytes (default: hex on stdin)",
    )
    parser.add_argument("--hex", dest="hex_text", metavar="HEX", help="the frame as hex, inline")
    prefix = parser.add_mutually_exclusive_group()
    prefix.add_argument("--prefix", dest="prefix", action="store_true", default=None,
                        help="the data starts with the 4-byte frame length")
    prefix.add_argument("--no-prefix", dest="prefix", action="store_false",
                        help="the data is the payload only (default: detect)")
    parser.add_argument("--response", nargs=2, metavar=("API_KEY", "VERSION"),
                        help="dissect a response to this API (number or name, e.g. metadata 8)")
    parser.add_argument("--records", action="store_true",
                        help="the data is a record set (RecordBatches), not a frame")
    parser.add_argument("--binary", action="store_true",
                        help="read the file as raw bytes even if it looks like hex")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    data = _read_input(args)
    if not data:
        raise CliError("no bytes to inspect (the input is empty)")
    if args.records:
        if args.response:
            raise CliError("--records and --response do not go together")
        dissection = dissect_records(data)
    elif args.response:
        api_key, version = _parse_response_arg(*args.response)
        dissection = dissect_frame(data, prefix=args.prefix, response=True, api_key=api_key,
                                   api_version=version)
    else:
        dissection = dissect_frame(data, prefix=args.prefix)
    sys.stdout.write(render(dissection))
    return 0 if dissection.ok else 1


def _read_input(args: argparse.Namespace) -> bytes:
    if args.hex_text is not None:
        if args.file != "-":
            raise CliError("give the frame either with --hex or as a file, not both")
        return parse_hex(args.hex_text)
    if args.file == "-":
        if sys.stdin.isatty():
            raise CliError("paste the frame as hex on stdin, or give a file or --hex")
        return parse_hex(sys.stdin.read())
    path = Path(args.file)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    if args.binary or not _looks_like_hex(raw):
        return raw
    return parse_hex(raw.decode("ascii"))


_HEX_NOISE = re.compile(r"0x|[\s:,]")


def parse_hex(text: str) -> bytes:
    """Hex with any spacing, colons, commas or 0x prefixes; a clear error otherwise."""
    cleaned = _HEX_NOISE.sub("", text.strip())
    bad = next((c for c in cleaned if c not in string.hexdigits), None)
    if bad is not None:
        raise CliError(f"not hex: found {bad!r} (expected 0-9, a-f, spaces allowed)")
    if len(cleaned) % 2:
        raise CliError(f"odd number of hex digits ({len(cleaned)}): a byte is two digits")
    return bytes.fromhex(cleaned)


def _looks_like_hex(raw: bytes) -> bool:
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        return False
    cleaned = _HEX_NOISE.sub("", text.strip())
    return bool(cleaned) and all(c in string.hexdigits for c in cleaned)


def _parse_response_arg(key_text: str, version_text: str) -> tuple[int, int]:
    try:
        api_key = ApiKey(int(key_text)) if key_text.lstrip("-").isdigit() else _key_by_name(
            key_text)
    except ValueError:
        raise CliError(f"unknown API key {key_text!r}") from None
    try:
        version = int(version_text)
    except ValueError:
        raise CliError(f"API version must be a number, not {version_text!r}") from None
    low, high = known_versions(api_key)
    if not low <= version <= high:
        raise CliError(f"{api_key.name} has versions {low}-{high}, not {version}")
    return api_key, version


def _key_by_name(name: str) -> ApiKey:
    wanted = name.replace("-", "").replace("_", "").lower()
    for key in ApiKey:
        if key.name.replace("_", "").lower() == wanted:
            return key
    raise ValueError(name)


__all__ = ["ProtocolError", "parse_hex", "register", "run"]
