"""The partition side of transactions, on real logs and with no sockets.

Producer state tracks each open transaction's first offset; the last stable
offset (LSO) is min(HW, first offsets of transactions not yet ended with their
marker below the HW); an abort lands in the segment's ``.txnindex`` in
Kafka's 34-byte format; the WriteTxnMarkers handler appends markers through
the ReplicaManager; followers and a restarted broker rebuild the same state
from the log alone.
"""

from __future__ import annotations

import struct

import pytest

from simplekafka.broker.apis.txn_markers import WriteTxnMarkersHandler
from simplekafka.broker.metadata_cache import MetadataCache
from simplekafka.broker.partition import Partition
from simplekafka.broker.producer_state import ProducerStateTable
from simplekafka.broker.replica_manager import ReplicaManager
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.batch_header import read_header
from simplekafka.protocol.errors import ErrorCode, KafkaError
from simplekafka.protocol.messages import decode_request, encode_request
from simplekafka.protocol.records import Record, build_batch, build_end_txn_marker
from simplekafka.storage import AbortedTxn, Log, LogConfig, TransactionIndex

BIG = 1 << 20
T = 1_700_000_000_000
ME, OTHER = 1, 2


def txn_batch(pid: int, seq: int, *values: bytes, epoch: int = 0) -> bytes:
    return build_batch([Record(timestamp=T, value=v) for v in values], producer_id=pid,
                       producer_epoch=epoch, base_sequence=seq, is_transactional=True)


def plain_batch(*values: bytes) -> bytes:
    return build_batch([Record(timestamp=T, value=v) for v in values])


def marker(pid: int, commit: bool, epoch: int = 0, coordinator_epoch: int = 0) -> bytes:
    return build_end_txn_marker(pid, epoch, commit, coordinator_epoch, timestamp=T)


def open_partition(directory, isr=(ME,)) -> Partition:
    partition = Partition("t", 0, ME, Log.open(directory, LogConfig()))
    assert partition.make_leader(0, list(isr), [ME, OTHER], 0, 1)
    return partition


def append(partition: Partition, records: bytes, internal: bool = False):
    return partition.append_as_leader(records, 1, 1, BIG, None if internal else 8,
                                      internal=internal)


# -- producer state and the LSO -------------------------------------------------------------


def test_lso_stops_at_the_first_open_transaction_and_moves_when_it_ends(tmp_path):
    p = open_partition(tmp_path / "t-0")
    append(p, plain_batch(b"a"))                       # 0
    append(p, txn_batch(10, 0, b"x", b"y"))            # 1-2, producer 10 opens
    append(p, plain_batch(b"b"))                       # 3
    append(p, txn_batch(11, 0, b"z"))                  # 4, producer 11 opens
    assert p.high_watermark == 5 and p.last_stable_offset == 1
    append(p, marker(10, commit=True), internal=True)  # 5
    assert p.last_stable_offset == 4                   # producer 11 still open
    append(p, marker(11, commit=False), internal=True)  # 6
    assert p.last_stable_offset == p.high_watermark == 7
    assert p.producers.ongoing == {}


def test_an_ended_transaction_holds_the_lso_until_its_marker_is_below_the_hw(tmp_path):
    p = open_partition(tmp_path / "t-0", isr=(ME, OTHER))
    append(p, txn_batch(10, 0, b"x"))                  # 0
    p.record_follower_fetch(OTHER, 1)
    assert p.high_watermark == 1 and p.last_stable_offset == 0
    append(p, marker(10, commit=True), internal=True)  # 1, not replicated yet
    assert p.last_stable_offset == 0
    p.record_follower_fetch(OTHER, 2)
    assert p.high_watermark == 2 and p.last_stable_offset == 2


def test_read_committed_reads_stop_at_the_lso(tmp_path):
    p = open_partition(tmp_path / "t-0")
    append(p, plain_batch(b"a"))
    append(p, txn_batch(10, 0, b"x"))
    committed = p.read(0, BIG, read_committed=True)
    assert read_header(committed).next_offset == 1 and len(committed) == read_header(
        committed).size
    assert p.read(1, BIG, read_committed=True) == b""
    assert len(p.read(0, BIG)) > len(committed)        # read_uncommitted sees the open one


def test_clients_may_not_write_control_batches_and_fenced_markers_are_refused(tmp_path):
    p = open_partition(tmp_path / "t-0")
    with pytest.raises(KafkaError) as refused:
        append(p, marker(10, commit=True))
    assert refused.value.error_code == ErrorCode.INVALID_RECORD
    append(p, txn_batch(10, 0, b"x", epoch=3))
    with pytest.raises(KafkaError) as old_epoch:
        append(p, marker(10, commit=True, epoch=2), internal=True)
    assert old_epoch.value.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    append(p, marker(10, commit=True, epoch=3, coordinator_epoch=5), internal=True)
    append(p, txn_batch(10, 1, b"y", epoch=3))
    with pytest.raises(KafkaError) as old_coordinator:
        append(p, marker(10, commit=False, epoch=3, coordinator_epoch=4), internal=True)
    assert old_coordinator.value.error_code == ErrorCode.TRANSACTION_COORDINATOR_FENCED


def test_a_plain_batch_inside_the_producers_open_transaction_is_refused():
    table = ProducerStateTable()
    header = read_header(txn_batch(7, 0, b"x"))
    table.record(header, 0)
    plain = read_header(build_batch([Record(timestamp=T, value=b"v")], producer_id=7,
                                    producer_epoch=0, base_sequence=1))
    with pytest.raises(KafkaError) as refused:
        table.check(plain)
    assert refused.value.error_code == ErrorCode.INVALID_TXN_STATE


# -- the aborted-transactions index ---------------------------------------------------------


def test_txnindex_entries_are_kafkas_34_byte_format(tmp_path):
    path = tmp_path / "00000000000000000000.txnindex"
    index = TransactionIndex(path)
    index.append(AbortedTxn(5, 10, 20, 21))
    index.append(AbortedTxn(6, 12, 30, 31))
    index.append(AbortedTxn(5, 10, 20, 21))  # a replay: already there
    assert path.read_bytes() == (struct.pack(">hqqqq", 0, 5, 10, 20, 21)
                                 + struct.pack(">hqqqq", 0, 6, 12, 30, 31))
    assert TransactionIndex(path).entries == index.entries
    assert index.collect(0, 15) == ([AbortedTxn(5, 10, 20, 21)], True)  # LSO 21 >= 15: done
    assert index.collect(0, 100) == (list(index.entries), False)
    assert index.collect(21, 100)[0] == [AbortedTxn(6, 12, 30, 31)]
    assert index.collect(0, 5)[0] == []
    index.truncate_to(30)
    assert TransactionIndex(path).entries == (AbortedTxn(5, 10, 20, 21),)
    with open(path, "ab") as torn:
        torn.write(b"\x00\x00\x01")
    assert TransactionIndex(path).entries == (AbortedTxn(5, 10, 20, 21),)
    assert path.stat().st_size == 34


def test_an_abort_is_indexed_with_the_lso_after_it(tmp_path):
    p = open_partition(tmp_path / "t-0")
    append(p, txn_batch(10, 0, b"x"))                  # 0
    append(p, txn_batch(11, 0, b"y"))                  # 1
    append(p, marker(10, commit=False), internal=True)  # 2: 11 still open, LSO after = 1
    append(p, marker(11, commit=False), internal=True)  # 3: nothing open, LSO after = 4
    index = tmp_path / "t-0" / "00000000000000000000.txnindex"
    assert TransactionIndex(index).entries == (AbortedTxn(10, 0, 2, 1), AbortedTxn(11, 1, 3, 4))
    assert p.aborted_transactions(0, p.read(0, BIG)) == [AbortedTxn(10, 0, 2, 1),
                                                         AbortedTxn(11, 1, 3, 4)]


def test_a_commit_writes_no_txnindex_file(tmp_path):
    p = open_partition(tmp_path / "t-0")
    append(p, txn_batch(10, 0, b"x"))
    append(p, marker(10, commit=True), internal=True)
    assert not list((tmp_path / "t-0").glob("*.txnindex"))


def test_aborts_are_collected_across_segments_and_go_with_their_segment(tmp_path):
    p = open_partition(tmp_path / "t-0")
    append(p, txn_batch(10, 0, b"x"))                  # 0
    append(p, marker(10, commit=False), internal=True)  # 1
    p.log.roll()
    append(p, txn_batch(10, 1, b"y"))                  # 2
    append(p, marker(10, commit=False), internal=True)  # 3
    assert p.log.collect_aborted_txns(0, 4) == [AbortedTxn(10, 0, 1, 2), AbortedTxn(10, 2, 3, 4)]
    assert p.log.collect_aborted_txns(2, 4) == [AbortedTxn(10, 2, 3, 4)]
    p.log.roll()
    p.high_watermark = p.log_end_offset
    p.log.delete_records_before(2)                     # the first segment goes, its index too
    names = sorted(f.name for f in (tmp_path / "t-0").glob("*.txnindex"))
    assert names == ["00000000000000000002.txnindex"]


# -- followers, truncation and restarts rebuild the same state from the log -----------------


def _transactional_log(p: Partition) -> None:
    append(p, txn_batch(10, 0, b"x"))                  # 0
    append(p, plain_batch(b"plain"))                   # 1
    append(p, txn_batch(11, 0, b"y"))                  # 2
    append(p, marker(10, commit=False), internal=True)  # 3
    append(p, txn_batch(12, 0, b"z"))                  # 4, left open


def test_a_follower_builds_the_leaders_state_from_the_copied_log(tmp_path):
    leader = open_partition(tmp_path / "t-0")
    _transactional_log(leader)
    follower = Partition("t", 0, OTHER, Log.open(tmp_path / "f" / "t-0", LogConfig()))
    follower.make_follower(ME, 0, [ME, OTHER], [ME, OTHER], 0, 1)
    follower.append_as_follower(leader.read(0, BIG, replica_id=OTHER), leader.log_end_offset)
    assert follower.producers.ongoing == leader.producers.ongoing == {11: 2, 12: 4}
    assert follower.log.collect_aborted_txns(0, 5) == [AbortedTxn(10, 0, 3, 2)]
    assert follower.last_stable_offset == 2


def test_a_restart_recovers_open_transactions_the_lso_and_a_lost_txnindex(tmp_path):
    directory = tmp_path / "t-0"
    p = open_partition(directory)
    _transactional_log(p)
    p.log.abandon()  # a crash: nothing closed cleanly
    (directory / "00000000000000000000.txnindex").unlink()
    again = Partition("t", 0, ME, Log.open(directory, LogConfig(), clean_shutdown=False))
    again.restore_high_watermark(5)
    assert again.producers.ongoing == {11: 2, 12: 4}
    assert again.last_stable_offset == 2
    assert again.log.collect_aborted_txns(0, 5) == [AbortedTxn(10, 0, 3, 2)]
    assert TransactionIndex(directory / "00000000000000000000.txnindex").entries == (
        AbortedTxn(10, 0, 3, 2),)
    # and the transaction left open before the crash can still be ended after it
    again.make_leader(1, [ME], [ME, OTHER], 1, 2)
    append(again, marker(11, commit=True), internal=True)
    append(again, marker(12, commit=True), internal=True)
    assert again.last_stable_offset == again.high_watermark == 7


def test_truncation_forgets_aborts_past_the_new_end(tmp_path):
    p = open_partition(tmp_path / "t-0")
    _transactional_log(p)
    p.make_follower(OTHER, 1, [ME, OTHER], [ME, OTHER], 1, 2)
    p.truncate_to(3)                                   # the abort marker at 3 goes
    assert p.log.collect_aborted_txns(0, 10) == []
    assert p.producers.ongoing == {10: 0, 11: 2}


# -- the WriteTxnMarkers handler ------------------------------------------------------------


def test_write_txn_markers_appends_through_the_replica_manager(tmp_path):
    from simplekafka.storage import LogManager
    manager = ReplicaManager(ME, LogManager([tmp_path]), MetadataCache())
    p = Partition("t", 0, ME, manager.log_manager.get_or_create("t", 0))
    p.make_leader(0, [ME], [ME], 0, 1)
    manager.partitions[("t", 0)] = p
    append(p, txn_batch(10, 0, b"x"))
    body = {"markers": [
        {"producer_id": 10, "producer_epoch": 0, "transaction_result": False,
         "coordinator_epoch": 1, "topics": [{"name": "t", "partition_indexes": [0, 1]}]},
        {"producer_id": 99, "producer_epoch": 0, "transaction_result": True,
         "coordinator_epoch": 1, "topics": [{"name": "gone", "partition_indexes": [0]}]}]}
    _, request = decode_request(encode_request(ApiKey.WRITE_TXN_MARKERS, 1, 1, "c", body))
    answer = WriteTxnMarkersHandler(manager)(None, request)
    assert answer.called
    result = answer.result
    codes = [(m["producer_id"], t["name"], q["partition_index"], q["error_code"])
             for m in result["markers"] for t in m["topics"] for q in t["partitions"]]
    assert codes == [(10, "t", 0, ErrorCode.NONE),
                     (10, "t", 1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                     (99, "gone", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert p.log.collect_aborted_txns(0, 2) == [AbortedTxn(10, 0, 1, 2)]
    assert p.last_stable_offset == 2


def test_a_transactional_batch_without_sequence_opens_a_transaction_too(tmp_path):
    """TxnOffsetCommit's batches on __consumer_offsets are the broker's, with no sequence."""
    p = open_partition(tmp_path / "t-0")
    offsets_batch = build_batch([Record(timestamp=T, key=b"k", value=b"v")], producer_id=10,
                                producer_epoch=0, base_sequence=-1, is_transactional=True)
    append(p, offsets_batch, internal=True)            # 0
    assert p.last_stable_offset == 0
    append(p, marker(10, commit=True), internal=True)  # 1
    assert p.last_stable_offset == 2


def test_dump_log_shows_transactions_markers_and_the_txnindex(tmp_path, capsys):
    from simplekafka.cli import main

    p = open_partition(tmp_path / "t-0")
    _transactional_log(p)
    p.log.close()
    assert main(["dump-log", str(tmp_path / "t-0")]) == 0
    out = capsys.readouterr().out
    assert "producer 10 epoch 0, transactional" in out
    assert "producer 10 epoch 0: ABORT marker, coordinator epoch 0" in out
    assert "1 aborted transactions" in out
    assert "producer 10: offsets 0..3 aborted, last stable offset 2" in out
    assert out.index(".log") < out.index(".txnindex")


# -- producer snapshots ---------------------------------------------------------------------


def test_snapshot_bytes_are_kafkas_version_1_format(tmp_path):
    import crc32c

    from simplekafka.storage.producer_snapshot import (
        SnapshotEntry,
        decode_snapshot,
        encode_snapshot,
        latest_snapshot,
        snapshot_path,
        write_snapshot,
    )

    entry = SnapshotEntry(10, 3, 41, 140, 1, -1, 7, 120)
    body = struct.pack(">i", 1) + struct.pack(">qhiqiqiq", 10, 3, 41, 140, 1, -1, 7, 120)
    assert encode_snapshot([entry]) == struct.pack(">hI", 1, crc32c.crc32c(body)) + body
    assert decode_snapshot(encode_snapshot([entry])) == [entry]
    for offset in (5, 9, 12):
        write_snapshot(tmp_path, offset, [entry])
    assert not snapshot_path(tmp_path, 5).exists()      # the newest two are kept
    damaged = bytearray(snapshot_path(tmp_path, 12).read_bytes())
    damaged[-1] ^= 1
    snapshot_path(tmp_path, 12).write_bytes(bytes(damaged))
    assert latest_snapshot(tmp_path, 100) == (9, [entry])  # a torn one is passed over
    assert latest_snapshot(tmp_path, 8) is None


def test_a_transaction_older_than_the_replay_window_survives_a_restart(tmp_path, monkeypatch):
    import simplekafka.broker.partition as partition_module

    monkeypatch.setattr(partition_module, "PRODUCER_STATE_REPLAY_OFFSETS", 3)
    directory = tmp_path / "t-0"
    p = open_partition(directory)
    append(p, txn_batch(10, 0, b"x"))                  # 0: opens long before the end
    append(p, txn_batch(11, 0, b"y"))                  # 1
    append(p, marker(11, commit=False), internal=True)  # 2
    assert p.maybe_snapshot_producers()                # what the periodic checkpoint does
    assert not p.maybe_snapshot_producers()            # nothing new since
    for n in range(5):
        append(p, plain_batch(b"p%d" % n))             # 3..7
    p.log.abandon()                                    # crash: no snapshot at shutdown
    again = Partition("t", 0, ME, Log.open(directory, LogConfig(), clean_shutdown=False))
    again.restore_high_watermark(8)
    assert again.producers.ongoing == {10: 0}
    assert again.last_stable_offset == 0
    # without the snapshot the bounded replay (offsets 5..7) would not know producer 10
    for path in directory.glob("*.snapshot"):
        path.unlink()
    blind = Partition("t", 0, ME, Log.open(directory, LogConfig()))
    assert blind.producers.ongoing == {}


def test_a_restarted_replica_lists_its_directory_once(tmp_path, monkeypatch):
    # Once to open the log, and the producer snapshots are found in that listing: at
    # thousands of replicas a restart spent seconds in seven listings per replica (a glob
    # per index suffix, one listing to delete snapshots past the end, one to find the
    # newest).
    import os

    directory = tmp_path / "t-0"
    p = open_partition(directory)
    append(p, txn_batch(10, 0, b"x"))
    assert p.maybe_snapshot_producers()
    p.log.abandon()
    listings = []
    real_listdir, real_scandir = os.listdir, os.scandir
    monkeypatch.setattr(os, "listdir", lambda path=".": listings.append(path)
                        or real_listdir(path))
    monkeypatch.setattr(os, "scandir", lambda path=".": listings.append(path)
                        or real_scandir(path))
    again = Partition("t", 0, ME, Log.open(directory, LogConfig(), clean_shutdown=False))
    assert again.producers.ongoing == {10: 0}
    assert len(listings) == 1, listings
    assert again.log.take_snapshot_listing() is None  # used once: later, list again


def test_snapshots_past_a_truncation_are_dropped(tmp_path):
    directory = tmp_path / "t-0"
    p = open_partition(directory)
    append(p, txn_batch(10, 0, b"x"))                  # 0
    append(p, plain_batch(b"a"))                       # 1
    assert p.maybe_snapshot_producers()                # at 2
    p.make_follower(OTHER, 1, [ME, OTHER], [ME, OTHER], 1, 2)
    p.truncate_to(1)
    assert [f.name for f in directory.glob("*.snapshot")] == []
    assert p.producers.ongoing == {10: 0}


def test_the_lso_never_falls_below_the_log_start(tmp_path):
    p = open_partition(tmp_path / "t-0")
    append(p, txn_batch(10, 0, b"x"))                  # 0, left open
    append(p, plain_batch(b"a"))                       # 1
    append(p, plain_batch(b"b"))                       # 2
    assert p.last_stable_offset == 0
    p.delete_records_on_leader(2)
    assert p.last_stable_offset == 2


def test_ended_transactions_are_forgotten_once_below_the_hw_on_a_follower_too():
    table = ProducerStateTable()
    for number in range(100):
        table.record(read_header(txn_batch(10, number, b"x")), 2 * number)
        table.complete_txn(10, 0, 0, 2 * number + 1, commit=True, high_watermark=2 * number)
    assert len(table._unreplicated) <= 2


def test_the_replica_manager_snapshots_open_transactions_and_everything_at_shutdown(tmp_path):
    from simplekafka.storage import LogManager

    manager = ReplicaManager(ME, LogManager([tmp_path]), MetadataCache())
    for name in ("open", "idempotent", "idle"):
        p = Partition(name, 0, ME, manager.log_manager.get_or_create(name, 0))
        p.make_leader(0, [ME], [ME], 0, 1)
        manager.partitions[(name, 0)] = p
    append(manager.partitions[("open", 0)], txn_batch(10, 0, b"x"))
    append(manager.partitions[("idempotent", 0)], build_batch(
        [Record(timestamp=T, value=b"v")], producer_id=11, producer_epoch=0, base_sequence=0))
    assert manager.snapshot_producers() == 1            # the periodic one: open transactions
    manager.shutdown()                                  # and at shutdown every producer state
    snapshots = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.snapshot"))
    assert snapshots == ["idempotent-0/00000000000000000001.snapshot",
                         "open-0/00000000000000000001.snapshot"]


def test_retention_removes_a_segments_txnindex_with_it(tmp_path):
    p = open_partition(tmp_path / "t-0")
    append(p, txn_batch(10, 0, b"x"))                  # 0
    append(p, marker(10, commit=False), internal=True)  # 1: indexed in segment 0
    p.log.roll()
    append(p, plain_batch(b"a"))                       # 2
    p.log.update_config(LogConfig(retention_ms=1))
    assert p.log.enforce_retention(now_ms=T * 10, high_watermark=p.high_watermark) == 1
    assert not list((tmp_path / "t-0").glob("*.txnindex"))
    assert p.log.collect_aborted_txns(2, 3) == []


def test_a_follower_starting_over_at_the_leaders_log_start_forgets_its_producers(tmp_path):
    p = open_partition(tmp_path / "t-0")
    append(p, txn_batch(10, 0, b"x"))
    assert p.maybe_snapshot_producers()
    p.make_follower(OTHER, 1, [ME, OTHER], [ME, OTHER], 1, 2)
    p.start_over_at(50)
    assert (p.log_start_offset, p.log_end_offset, p.high_watermark) == (50, 50, 50)
    assert p.producers.ongoing == {} and not list((tmp_path / "t-0").glob("*.snapshot"))
