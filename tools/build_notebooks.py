"""Writes the Jupyter walkthroughs in notebooks/ from the cell texts below.

The notebooks are generated rather than edited in Jupyter so that their diffs
stay readable, their outputs are always cleared when committed, and their cell
ids are stable. Edit the cells here, then run::

    .venv/bin/python tools/build_notebooks.py          # rewrite notebooks/*.ipynb
    .venv/bin/python tools/build_notebooks.py --check  # exit 1 if a notebook is stale

tests/test_notebooks.py runs the check and executes every notebook against a
live cluster.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"

KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def md(text: str) -> tuple[str, str]:
    return ("markdown", text)


def code(text: str) -> tuple[str, str]:
    return ("code", text)


PROTOCOL = [
    md("""
    # 1. The wire protocol, byte by byte

    Kafka clients and brokers exchange length-prefixed binary frames. This
    notebook uses `simplekafka.protocol`, the sans-I/O codec that the broker,
    the client and the tests share (stage 1), to build a request, take it apart
    field by field, build a RecordBatch the way a producer does, and break it.
    No sockets and no cluster: bytes in, objects out.
    """),
    md("""
    ## A request, framed

    `encode_request` writes the request header (API key, version, correlation
    id, client id) and the body from a plain dict; `encode_frame` puts the
    4-byte big-endian length in front, which is all Kafka's framing is.
    """),
    code("""
    from simplekafka.protocol import ApiKey, decode_request, encode_frame, encode_request

    request = encode_request(ApiKey.METADATA, 8, 42, "notebook", {"topics": [{"name": "orders"}]})
    frame = encode_frame(request)
    print(len(frame), "bytes:", frame.hex(" "))
    """),
    md("""
    ## The dissector

    `simplekafka.protocol.dissect` walks a frame with the same schemas and
    reports every field: where it starts, how long it is, its raw bytes and its
    value. `simplekafka inspect` on the command line prints the same table.
    """),
    code("""
    from simplekafka.protocol.dissect import dissect_frame, dissect_records, render

    print(render(dissect_frame(frame)))
    """),
    md("""
    A broker does the reverse: header first (it says which schema the body
    has), then the body, as a `Struct` whose fields are attributes.
    """),
    code("""
    header, body = decode_request(request)
    print(header)
    print(body.topics[0].name, body.allow_auto_topic_creation)
    """),
    md("""
    Bytes that stop early are not guessed at: the dissection ends with a hex
    dump, a caret under the first missing byte, and what was expected there.
    """),
    code("""
    print(render(dissect_frame(frame[:30])).split("error at")[1])
    """),
    md("""
    ## A RecordBatch

    Produce requests carry records as RecordBatch v2 bytes, which is also
    exactly what the broker stores and returns on Fetch: a 61-byte header, then
    the records. A record is a key, a value, headers and deltas (of offset and
    timestamp) against the batch header, in varints.
    """),
    code("""
    from simplekafka.protocol.batch_header import (
        patch_base_offset,
        patch_leader_epoch,
        read_header,
        validate_batch,
    )
    from simplekafka.protocol.records import build_batch, parse_batch

    batch = build_batch([
        (b"alice", b"home page"),
        (b"bob", b"cart"),
        {"key": None, "value": b"checkout", "headers": [("trace", b"42")]},
    ])
    print(len(batch), "bytes")
    print(read_header(batch))
    for record in parse_batch(batch).records:
        print(record)
    """),
    code("""
    print(render(dissect_records(batch)))
    """),
    md("""
    The CRC-32C covers bytes 21 to the end. The base offset (bytes 0-7) and
    the partition leader epoch (bytes 12-15) lie outside it, so a leader can
    assign offsets and stamp its epoch by patching 12 bytes, without decoding a
    record or recomputing the checksum. That is the broker's hot path.
    """),
    code("""
    stored = bytearray(batch)
    patch_base_offset(stored, 1000)
    patch_leader_epoch(stored, 3)
    header = validate_batch(stored)  # length, magic and CRC: still valid
    print("offsets", header.base_offset, "to", header.last_offset,
          "epoch", header.partition_leader_epoch)
    print([record.offset for record in parse_batch(stored).records])
    """),
    md("""
    ## Flip one byte

    Change one letter of a value, as a bad disk or a buggy proxy might. The
    CRC no longer matches, and the batch is refused with `CorruptBatchError`,
    whose error code is what a broker answers a producer (CORRUPT_MESSAGE).
    """),
    code("""
    from simplekafka.protocol.errors import CorruptBatchError

    damaged = bytearray(batch)
    where = damaged.index(b"cart")
    damaged[where] ^= 0x20  # b"cart" becomes b"Cart"
    try:
        validate_batch(damaged)
    except CorruptBatchError as exc:
        print(f"refused: {exc} (error {exc.error_code.value}, {exc.error_code.name})")
    """),
    md("""
    The dissector still reads every field, so you can see what the bytes say,
    and marks the checksum that does not add up:
    """),
    code("""
    for line in render(dissect_records(damaged)).splitlines():
        if "crc" in line or "Cart" in line:
            print(line)
    """),
]

STORAGE = [
    md("""
    # 2. A partition's log on disk

    A partition is an append-only log of record batches, stored the way Kafka
    stores it: segment files named by their first offset, sparse
    memory-mapped indexes, and recovery after a crash. This notebook opens a
    `simplekafka.storage.Log` in a temporary directory (stage 3), writes to it,
    looks at its files, tears a write in half and watches recovery cut it off.
    """),
    code("""
    import os
    import shutil
    import tempfile
    from pathlib import Path

    from simplekafka.protocol.records import build_batch, parse_batches
    from simplekafka.storage import Log, LogConfig

    workdir = Path(tempfile.mkdtemp(prefix="notebook-storage-"))
    partition_dir = workdir / "clicks-0"
    # Small segments and a dense index, so that a few batches show several of each.
    config = LogConfig(segment_bytes=2048, index_interval_bytes=256)
    log = Log.open(partition_dir, config)
    print("log start", log.log_start_offset, "log end", log.log_end_offset)
    """),
    md("""
    ## Appending

    A producer's batch arrives with base offset 0. `append` checks its header
    and CRC, writes the log end offset into bytes 0-7 and the leader epoch into
    bytes 12-15, and appends the bytes. It never decodes a record.
    """),
    code("""
    T0 = 1_700_000_000_000
    for n in range(20):
        batch = build_batch([
            {"key": f"user-{n % 3}".encode(), "value": f"click {n}.{i} ".encode() + b"." * 30,
             "timestamp": T0 + 1000 * n + i}
            for i in range(3)
        ])
        info = log.append(batch, leader_epoch=0)
        if n < 3:
            print(info)
    print("log end offset:", log.log_end_offset)
    """),
    md("""
    ## Reading

    `read(offset, max_bytes)` returns whole batches, starting with the one
    that holds `offset`: ask for offset 7 and you get the batch 6..8. The
    first batch always comes whole even when it is bigger than `max_bytes`.
    """),
    code("""
    for stored in parse_batches(log.read(7, max_bytes=500)):
        print(stored.header.base_offset, [record.value[:9] for record in stored.records])
    """),
    md("""
    ## The files

    Each segment is a `.log` file of batches back to back, an offset index and
    a time index. The active (last) segment's indexes are preallocated to their
    maximum size and trimmed when the segment rolls or the log closes.
    """),
    code("""
    for path in sorted(partition_dir.iterdir()):
        print(f"{path.name:<32} {path.stat().st_size:>10} bytes")
    """),
    md("""
    The offset index is sparse: one entry per `index_interval_bytes` of log,
    mapping the last offset of a batch to the byte position of the batch. A
    lookup is a binary search in the index, then a short scan of batch headers.
    The time index maps the largest timestamp so far to an offset.
    """),
    code("""
    for segment in log.segments:
        print(f"{segment.log_path.name}: offsets {segment.base_offset}..{segment.next_offset - 1}"
              f", offset index {segment.offset_index.entries()}")
    second = log.segments[1]
    wanted = second.base_offset + 5
    position, header = second.translate_offset(wanted)
    print(f"offset {wanted} is in the batch {header.base_offset}..{header.last_offset}"
          f" at byte {position}")
    print("time index of the first segment:", log.segments[0].time_index.entries())
    print("first offset at or after T0 + 7.5 s:", log.offset_for_timestamp(T0 + 7500))
    """),
    md("""
    ## A torn write

    Now a crash in the middle of a write: append a batch, drop the log without
    closing it (`abandon`, like `kill -9`), keep only the first 50 bytes of
    the last batch and let the file system leave zeros after them.
    """),
    code("""
    kept_end = log.log_end_offset
    torn = log.append(build_batch([(None, b"this batch will be torn " * 10)]), leader_epoch=0)
    log.abandon()

    active = partition_dir / f"{log.segments[-1].base_offset:020d}.log"
    with open(active, "r+b") as handle:
        handle.truncate(active.stat().st_size - torn.size + 50)
        handle.seek(0, os.SEEK_END)
        handle.write(b"\\0" * 100)
    print(f"{active.name}: {active.stat().st_size} bytes, of which the last 150 are garbage")
    """),
    md("""
    `simplekafka dump-log`, the counterpart of Kafka's `kafka-dump-log.sh`,
    reads the files without changing them and says where recovery would cut:
    """),
    code("""
    from simplekafka.cli import main as simplekafka

    exit_code = simplekafka(["dump-log", str(active)])
    """),
    md("""
    ## Recovery

    Opened without a clean-shutdown marker, the log re-validates every batch
    after its recovery point, cuts the file at the first bad byte and rebuilds
    the indexes. What was written before the damage is all there; nothing after
    it is believed.
    """),
    code("""
    log = Log.open(partition_dir, config)
    print("recovery cut", log.truncated_on_recovery, "bytes; log end", log.log_end_offset)
    assert log.log_end_offset == kept_end == torn.base_offset
    info = log.append(build_batch([(None, b"life goes on")]), leader_epoch=0)
    print("the next append gets offset", info.base_offset)
    log.close()
    shutil.rmtree(workdir)
    """),
]

BROKER_AND_CLIENTS = [
    md("""
    # 3. A broker, our clients, and a real Kafka client

    `LocalCluster` starts ZooKeeper and a broker as real processes on free
    loopback ports, exactly as the tests, the stage demos and `run_cluster.sh`
    do. We create a topic with `Admin`, write with our `Producer`, read with our
    `Consumer`, read the same records with confluent-kafka (librdkafka, the C
    client behind most Kafka tools), and look at what ZooKeeper holds. The last
    cell stops everything: if you leave half way, run it anyway.
    """),
    code("""
    from simplekafka.cluster import LocalCluster

    cluster = LocalCluster(brokers=1)  # data and logs go to a temporary directory
    cluster.start()  # returns once the broker answers ApiVersions and Metadata
    print("bootstrap servers:", cluster.bootstrap_servers)
    print("ZooKeeper:        ", cluster.zookeeper_connect)
    print("broker log:       ", cluster.brokers[1].log_file)
    """),
    md("""
    ## A topic

    Creating a topic is a request to the controller, which writes the
    assignment to ZooKeeper and tells the broker it leads the partitions.
    """),
    code("""
    from simplekafka.admin import Admin

    admin = Admin(cluster.bootstrap_servers)
    admin.create_topic("clicks", num_partitions=3)
    for partition in admin.describe_topics(["clicks"])["clicks"].partitions:
        print(f"clicks/{partition.partition}: leader {partition.leader}, isr {partition.isr}")
    """),
    md("""
    ## Produce

    `send` returns a future at once; a background thread batches the records
    per partition and sends them. A key picks the partition with murmur2, like
    the Java client, so every record of `user-0` lands in the same partition.
    """),
    code("""
    from simplekafka.producer import Producer

    with Producer(cluster.bootstrap_servers, acks="all", linger_ms=5) as producer:
        futures = [producer.send("clicks", f"page {n}".encode(), key=f"user-{n % 4}".encode())
                   for n in range(20)]
        producer.flush()
    for future in futures[:4]:
        metadata = future.result()
        print(f"partition {metadata.partition}, offset {metadata.offset}")
    """),
    md("""
    ## Consume with our Consumer
    """),
    code("""
    from simplekafka.client import TopicPartition
    from simplekafka.consumer import Consumer

    with Consumer(bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest",
                  consumer_timeout_ms=2000) as consumer:
        consumer.assign([TopicPartition("clicks", p) for p in range(3)])
        ours = [(r.partition, r.offset, r.key, r.value) for r in consumer]
    print(len(ours), "records; the first three:", ours[:3])
    """),
    md("""
    ## The same records through confluent-kafka

    An independent implementation of the protocol is the best check we have.
    librdkafka negotiates versions with ApiVersions, fetches, checks every
    batch's CRC, and must see exactly what our consumer saw.
    """),
    code("""
    import time

    from confluent_kafka import Consumer as ConfluentConsumer
    from confluent_kafka import TopicPartition as ConfluentTopicPartition

    reader = ConfluentConsumer({"bootstrap.servers": cluster.bootstrap_servers,
                                "group.id": "notebook", "enable.auto.commit": False,
                                "check.crcs": True})
    reader.assign([ConfluentTopicPartition("clicks", p, 0) for p in range(3)])
    theirs = []
    deadline = time.monotonic() + 60
    while len(theirs) < len(ours) and time.monotonic() < deadline:
        message = reader.poll(0.5)
        if message is not None and message.error() is None:
            theirs.append((message.partition(), message.offset(), message.key(), message.value()))
    reader.close()
    print(len(theirs), "records; identical to ours:", sorted(theirs) == sorted(ours))
    assert sorted(theirs) == sorted(ours)
    """),
    md("""
    ## What ZooKeeper holds

    The layout is ZooKeeper-mode Kafka's, so `zkCli` shows what a Kafka
    operator saw. `cluster.zk` is a kazoo client on the cluster's ZooKeeper.
    A broker's registration is ephemeral: it vanishes with the broker's
    session, and its creation id (czxid) serves as the broker epoch.
    """),
    code("""
    from simplekafka.coordination.tree import format_tree

    print(format_tree(cluster.zk, "/brokers"))
    """),
    code("""
    data, stat = cluster.zk.get("/brokers/ids/1")
    print(data.decode())
    print("ephemeral owner (session id):", hex(stat.ephemeralOwner), " czxid:", stat.czxid)
    controller, _ = cluster.zk.get("/controller")
    print("/controller =", controller.decode())
    state, _ = cluster.zk.get("/brokers/topics/clicks/partitions/0/state")
    print("/brokers/topics/clicks/partitions/0/state =", state.decode())
    """),
    md("""
    ## Stop

    SIGTERM to the broker (it deregisters and flushes), then ZooKeeper; the
    temporary directory goes too.
    """),
    code("""
    admin.close()
    cluster.cleanup()
    print("running brokers:", cluster.running_brokers())
    """),
]

REPLICATION = [
    md("""
    # 4. Replication and failover

    Three brokers, one partition on all three, writes with `acks="all"`: a
    write is acknowledged only once every in-sync replica (ISR) has it. Then
    the leader is killed with SIGKILL. The controller elects a new leader from
    the ISR, with a higher leader epoch; nothing acknowledged is lost; the old
    leader comes back as a follower and rejoins the ISR. (Stage 7;
    `run_cluster.sh` shows the same with three partitions.) The last cell stops
    the brokers and ZooKeeper: if you leave half way, run it anyway.
    """),
    code("""
    from simplekafka.admin import Admin
    from simplekafka.cluster import LocalCluster

    # Short timeouts, so that failover takes seconds rather than Kafka's production defaults.
    cluster = LocalCluster(brokers=3, broker_config={
        "zookeeper.session.timeout.ms": "6000",
        "replica.lag.time.max.ms": "4000",
    })
    cluster.start()
    print("bootstrap servers:", cluster.bootstrap_servers)
    print("controller: broker", cluster.controller_id())

    with Admin(cluster.bootstrap_servers) as admin:
        admin.create_topic("payments", num_partitions=1, replication_factor=3,
                           config={"min.insync.replicas": "2"})
    cluster.wait_for_isr("payments", 0, cluster.replicas_of("payments", 0))
    print("replicas:", cluster.replicas_of("payments", 0))
    print(cluster.partition_state("payments", 0))
    """),
    md("""
    ## Acknowledged writes

    `DeliveryLog` (from `simplekafka.cluster.checker`) notes every send the
    cluster acknowledged, and later every record a consumer read.
    """),
    code("""
    from simplekafka.cluster.checker import DeliveryLog
    from simplekafka.producer import Producer

    deliveries = DeliveryLog()


    def produce(first: int, count: int) -> None:
        with Producer(cluster.bootstrap_servers, acks="all", linger_ms=5,
                      request_timeout_ms=10_000, delivery_timeout_ms=60_000) as producer:
            for number in range(first, first + count):
                value = f"payment-{number:04d}".encode()
                deliveries.track(producer.send("payments", value), value=value)
            producer.flush(60)


    produce(0, 100)
    print("acknowledged:", len(deliveries.acks), " failed:", deliveries.failed_sends)
    """),
    md("""
    ## Kill the leader

    SIGKILL: no deregistration, no flush. ZooKeeper notices when the broker's
    session times out (6 s here); its `/brokers/ids` znode vanishes, and the
    controller elects the first live member of the ISR, in assignment order.
    If the dead broker was also the controller, another broker wins the
    controller election first.
    """),
    code("""
    import time

    old_leader = cluster.leader_of("payments", 0)
    cluster.kill(old_leader)
    killed_at = time.monotonic()
    cluster.wait_for_znode_gone(old_leader)
    new_leader = cluster.wait_for_leader("payments", 0, not_=old_leader)
    print(f"broker {old_leader} killed; new leader broker {new_leader},"
          f" {time.monotonic() - killed_at:.1f} s later")
    print("controller: broker", cluster.controller_id())
    print(cluster.partition_state("payments", 0))
    """),
    md("""
    The ISR shrank to the live replicas and the leader epoch rose by one. With
    `min.insync.replicas=2`, two replicas are still enough to take writes:
    """),
    code("""
    produce(100, 100)
    print("acknowledged:", len(deliveries.acks), " failed:", deliveries.failed_sends)
    """),
    md("""
    ## Was anything lost?

    Read the partition from the beginning and let the checker compare: every
    acknowledged record must be there, once, at the offset it was acknowledged
    at.
    """),
    code("""
    from simplekafka.client import TopicPartition
    from simplekafka.consumer import Consumer

    with Consumer(bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest",
                  consumer_timeout_ms=3000) as consumer:
        consumer.assign([TopicPartition("payments", 0)])
        deliveries.consumed_all(consumer)
    report = deliveries.check()
    print(report.summary())
    assert report.ok
    """),
    md("""
    ## The old leader returns

    Restarted on its old port and data, it asks the new leader where its last
    epoch ended (OffsetForLeaderEpoch), truncates anything after that, fetches
    what it missed, and rejoins the ISR once it has caught up.
    """),
    code("""
    cluster.restart(old_leader)
    cluster.wait_for_isr("payments", 0, [old_leader])
    print(cluster.partition_state("payments", 0))
    """),
    md("""
    Every replica's files now hold the same records. Each record carries the
    leader epoch it was written in: 0 before the kill, 1 after.
    """),
    code("""
    from simplekafka.cluster.checker import compare_replicas, read_partition_dir


    def replica_logs() -> dict:
        return {broker: read_partition_dir(cluster.partition_dir(broker, "payments", 0))
                for broker in cluster.brokers}


    def replicas_agree():
        comparison = compare_replicas(replica_logs())
        same_end = len(set(comparison.log_end_offsets.values())) == 1
        return comparison if comparison.agree and same_end else None


    comparison = cluster.wait_for(replicas_agree, "every replica to hold the same records")
    print("log end offsets:", comparison.log_end_offsets)
    stored = replica_logs()[old_leader]
    for epoch in sorted({record.leader_epoch for record in stored}):
        offsets = [record.offset for record in stored if record.leader_epoch == epoch]
        print(f"leader epoch {epoch}: offsets {offsets[0]}..{offsets[-1]}")
    """),
    md("""
    ## Stop
    """),
    code("""
    cluster.cleanup()
    print("running brokers:", cluster.running_brokers())
    """),
]

NOTEBOOKS = {
    "01_protocol": PROTOCOL,
    "02_storage": STORAGE,
    "03_broker_and_clients": BROKER_AND_CLIENTS,
    "04_replication": REPLICATION,
}


def build(name: str, cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    """A notebook with cleared outputs and stable cell ids (``<name>-<index>``)."""
    notebook = nbformat.v4.new_notebook()
    notebook.metadata = {
        "kernelspec": dict(KERNELSPEC),
        "language_info": {"name": "python"},
    }
    for index, (kind, text) in enumerate(cells):
        source = textwrap.dedent(text).strip("\n")
        cell = (nbformat.v4.new_markdown_cell(source) if kind == "markdown"
                else nbformat.v4.new_code_cell(source))
        cell.id = f"{name.replace('_', '-')}-{index:02d}"
        notebook.cells.append(cell)
    nbformat.validate(notebook)
    return notebook


def render(name: str) -> str:
    return nbformat.writes(build(name, NOTEBOOKS[name])) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a notebook is not what would be written")
    args = parser.parse_args(argv)
    stale = []
    for name in NOTEBOOKS:
        path = NOTEBOOK_DIR / f"{name}.ipynb"
        text = render(name)
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        if args.check:
            stale.append(path.name)
        else:
            NOTEBOOK_DIR.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print(f"stale notebooks: {', '.join(stale)}; run tools/build_notebooks.py",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
