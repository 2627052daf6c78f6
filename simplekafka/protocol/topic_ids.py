"""Topic IDs (KIP-516): 16 random bytes that name one incarnation of a topic.

A name can be deleted and created again; an ID never comes back. Kafka 2.8+
gives every topic one when it is created, stores it in the topic's znode and in
each partition directory's ``partition.metadata``, and puts it in Metadata
(v10+), Fetch (v13+), DeleteTopics (v6+) and CreateTopics (v7+), so a client
holding the old topic's ID gets UNKNOWN_TOPIC_ID instead of reading the new
topic as if it were the old one.

On the wire an ID is its 16 bytes (the codec's ``uuid``); in JSON, files and
logs it is shown as Kafka's ``Uuid.toString`` shows it: URL-safe base64
without padding, 22 characters.
"""

from __future__ import annotations

import base64
import os

__all__ = ["ZERO_ID", "new_topic_id", "topic_id_from_text", "topic_id_text"]

ZERO_ID = bytes(16)
"""No ID (Kafka's ``Uuid.ZERO_UUID``): what a request carries when it names a topic by name."""

# Kafka's Uuid.METADATA_TOPIC_ID (0...01): reserved for KRaft's metadata topic, never given out.
_RESERVED = {ZERO_ID, bytes(15) + b"\x01"}


def topic_id_text(topic_id: bytes) -> str:
    """The 22-character URL-safe base64 form Kafka prints and stores."""
    return base64.urlsafe_b64encode(bytes(topic_id)).decode("ascii").rstrip("=")


def topic_id_from_text(text: str) -> bytes:
    """The 16 bytes of an ID written as Kafka writes it; ValueError if it is not one."""
    if not isinstance(text, str) or len(text) != 22:
        raise ValueError(f"a topic id is 22 base64url characters, got {text!r:.40}")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (ValueError, TypeError):
        raise ValueError(f"{text!r} is not base64url") from None
    if len(raw) != 16:
        raise ValueError(f"{text!r} does not hold 16 bytes")
    return raw


def new_topic_id() -> bytes:
    """A random (version 4) UUID that is neither reserved nor shown starting with '-'
    (Kafka's ``Uuid.randomUuid`` avoids those: a leading '-' reads as a command-line flag)."""
    while True:
        raw = bytearray(os.urandom(16))
        raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
        raw[8] = (raw[8] & 0x3F) | 0x80  # IETF variant
        found = bytes(raw)
        if found not in _RESERVED and not topic_id_text(found).startswith("-"):
            return found
