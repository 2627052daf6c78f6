"""kcat (librdkafka 2.0.2, Debian's build) against a real broker process.

kcat is the strictest of our clients about what the broker advertises (it
silently stops compressing if Produce's minimum version is above 0), so each
codec test also reads the stored batches back raw and checks they really are
compressed with that codec.
"""

from __future__ import annotations

import json

import pytest

from simplekafka.protocol.compression import Compression

from ._interop import all_batches, create_topic, kcat, unique_topic

pytestmark = pytest.mark.integration

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def test_metadata_lists_the_broker_and_the_topic(cluster):
    topic = unique_topic("kcat-meta")
    create_topic(cluster.bootstrap_servers, topic, partitions=3)
    metadata = json.loads(kcat(cluster.bootstrap_servers, "-L", "-J", "-t", topic))
    assert [b["id"] for b in metadata["brokers"]] == [1]
    assert metadata["brokers"][0]["name"] == f"127.0.0.1:{cluster.broker_ports[1]}"
    (described,) = metadata["topics"]
    assert described["topic"] == topic
    assert sorted(p["partition"] for p in described["partitions"]) == [0, 1, 2]
    assert all(p["leader"] == 1 for p in described["partitions"])


def test_plain_metadata_listing_names_every_topic(cluster):
    topic = unique_topic("kcat-list")
    create_topic(cluster.bootstrap_servers, topic)
    listing = kcat(cluster.bootstrap_servers, "-L").decode()
    assert "1 brokers:" in listing
    assert f'topic "{topic}" with 1 partitions' in listing


@pytest.mark.parametrize("codec", CODECS)
def test_produce_and_consume_with_codec(cluster, codec):
    topic = unique_topic(f"kcat-{codec}")
    create_topic(cluster.bootstrap_servers, topic)
    # Compressible values (librdkafka never sends a batch that compression would grow).
    lines = [f"key-{i:04d}:value-{i:04d}-" + "abcdefgh" * 40 for i in range(500)]
    kcat(cluster.bootstrap_servers, "-P", "-t", topic, "-p", "0", "-K:", "-z", codec,
         "-H", "origin=kcat", "-H", f"codec={codec}",
         stdin=("\n".join(lines) + "\n").encode())

    out = kcat(cluster.bootstrap_servers, "-C", "-t", topic, "-p", "0", "-o", "beginning",
               "-e", "-q", "-f", "%o|%k|%s|%h\n")
    consumed = out.decode().splitlines()
    assert len(consumed) == len(lines)
    for offset, (line, expected) in enumerate(zip(consumed, lines)):
        got_offset, key, value, headers = line.split("|")
        assert int(got_offset) == offset
        assert f"{key}:{value}" == expected
        assert headers == f"origin=kcat,codec={codec}"

    batches = all_batches(cluster.broker_ports[1], topic, 0)
    codecs_on_disk = {batch.header.compression for batch in batches}
    assert codecs_on_disk == {Compression[codec.upper()]}, (
        f"kcat's {codec} batches were stored as {codecs_on_disk}: the broker's advertised "
        "versions made kcat fall back"
    )


def test_consume_from_a_given_offset_and_the_end(cluster):
    topic = unique_topic("kcat-offsets")
    create_topic(cluster.bootstrap_servers, topic)
    kcat(cluster.bootstrap_servers, "-P", "-t", topic, "-p", "0",
         stdin=b"".join(b"message %d\n" % i for i in range(50)))
    out = kcat(cluster.bootstrap_servers, "-C", "-t", topic, "-p", "0", "-o", "42", "-e", "-q",
               "-f", "%o %s\n")
    assert out.decode().splitlines() == [f"{i} message {i}" for i in range(42, 50)]
    out = kcat(cluster.bootstrap_servers, "-C", "-t", topic, "-p", "0", "-o", "-5", "-e", "-q",
               "-f", "%s\n")
    assert out.decode().splitlines() == [f"message {i}" for i in range(45, 50)]
