"""Moving a replica between a broker's log directories, without a broker: the LogManager's
future logs and the LogDirMover on a fake clock (the real thing through kafka-python is in
test_log_dir_moves_interop.py)."""

from __future__ import annotations

from pathlib import Path

from twisted.internet.task import Clock

from simplekafka.broker.log_dir_mover import LogDirMover
from simplekafka.broker.partition import Partition
from simplekafka.storage import LogConfig, LogManager
from simplekafka.storage.manager import DELETE_SUFFIX, FUTURE_SUFFIX, parse_marked_dir
from stages.stage3_storage.batches import make_batch

KEY = ("orders", 0)


def setup(tmp_path: Path, segment_bytes: int = 4096):
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = LogManager(dirs, LogConfig(segment_bytes=segment_bytes))
    manager._preferred_dirs[KEY] = dirs[0]  # start in "a" whatever the load says
    log_ = manager.get_or_create(*KEY)
    partition = Partition(*KEY, local_broker_id=1, log_=log_)
    partition.make_leader(3, [1], [1], 0, 1)
    clock = Clock()
    mover = LogDirMover(manager, {KEY: partition}, clock, chunk_bytes=2048)
    return dirs, manager, partition, clock, mover


def append(partition: Partition, count: int, start: int = 0) -> None:
    for number in range(start, start + count):
        partition.log.append(make_batch([b"value-%04d" % number] * 5), partition.leader_epoch)


def everything(log_) -> bytes:
    return log_.read(log_.log_start_offset, 1 << 30)


def run(clock: Clock, steps: int) -> None:
    for _ in range(steps):
        clock.advance(0.05)


def test_a_move_copies_while_appends_go_on_then_swaps_byte_for_byte(tmp_path):
    dirs, manager, partition, clock, mover = setup(tmp_path)
    append(partition, 40)
    future = manager.create_future(*KEY, dirs[1])
    assert future is not None and parse_marked_dir(future.directory.name)[2] == FUTURE_SUFFIX
    mover.step()  # the first chunk only: 2 KiB of a log of several
    assert 0 < future.log_end_offset < partition.log_end_offset
    append(partition, 20, start=40)  # writes keep going to the current log
    before = everything(partition.log)
    run(clock, 50)
    assert mover.moves_done == 1 and not manager.futures
    assert partition.log.directory == dirs[1] / "orders-0"
    assert manager.get(*KEY) is partition.log
    assert everything(partition.log) == before
    assert not (dirs[0] / "orders-0").exists()
    assert [p.name for p in dirs[0].iterdir() if p.is_dir()] == []
    assert partition.log.leader_epochs.latest_epoch == 3
    append(partition, 1, start=60)  # and after the swap, to the new one
    assert partition.log_end_offset == 61 * 5


def test_a_move_to_the_current_directory_cancels_one_under_way(tmp_path):
    dirs, manager, partition, _, _ = setup(tmp_path)
    append(partition, 5)
    assert manager.create_future(*KEY, dirs[1]) is not None
    assert manager.create_future(*KEY, dirs[0]) is None
    assert not manager.futures and not any(parse_marked_dir(p.name) for p in dirs[1].iterdir())


def test_a_truncated_current_log_is_followed_by_epoch(tmp_path):
    dirs, manager, partition, clock, mover = setup(tmp_path, segment_bytes=1 << 20)
    append(partition, 60)
    manager.create_future(*KEY, dirs[1])
    mover.step()
    future = manager.futures[KEY]
    assert 50 < future.log_end_offset < partition.log_end_offset
    # Partly copied: a follower's truncation and a new leader's data replace the tail of
    # the current log, some of it copied already.
    partition.truncate_to(50)
    partition.make_leader(4, [1], [1], 1, 1)
    append(partition, 3, start=100)
    expected = everything(partition.log)
    run(clock, 20)
    assert everything(partition.log) == expected
    assert partition.log.directory.parent == dirs[1]


def test_a_restart_mid_move_picks_the_future_log_up(tmp_path):
    dirs, manager, partition, clock, mover = setup(tmp_path)
    append(partition, 30)
    manager.create_future(*KEY, dirs[1])
    mover.step()
    copied = manager.futures[KEY].log_end_offset
    assert 0 < copied < partition.log_end_offset
    manager.close()
    again = LogManager(dirs, LogConfig(segment_bytes=4096))
    assert again.futures[KEY].log_end_offset == copied
    assert again.get(*KEY).directory.parent == dirs[0]
    partition = Partition(*KEY, local_broker_id=1, log_=again.get(*KEY))
    partition.make_leader(5, [1], [1], 0, 1)
    mover = LogDirMover(again, {KEY: partition}, clock)
    expected = everything(partition.log)
    mover.wake()
    run(clock, 20)
    assert partition.log.directory.parent == dirs[1] and everything(partition.log) == expected
    again.close()


def test_a_swap_cut_between_its_renames_is_finished_at_start(tmp_path):
    dirs, manager, partition, _, _ = setup(tmp_path)
    append(partition, 10)
    future = manager.create_future(*KEY, dirs[1])
    future.append_as_follower(everything(partition.log))
    expected = everything(partition.log)
    manager.close()
    # The first rename of the swap, then the crash: current is "-delete", future not renamed.
    current = dirs[0] / "orders-0"
    current.rename(current.with_name(f"orders-0.{'0' * 32}{DELETE_SUFFIX}"))
    again = LogManager(dirs, LogConfig(segment_bytes=4096))
    assert not again.futures and again.get(*KEY).directory == dirs[1] / "orders-0"
    assert everything(again.get(*KEY)) == expected
    assert [p.name for p in dirs[0].iterdir() if p.is_dir()] == []
    again.close()


def test_a_replica_not_created_yet_is_created_in_the_preferred_directory(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = LogManager(dirs)
    manager.prefer_dir("later", 0, dirs[1])
    manager.prefer_dir("later", 1, dirs[0])
    assert manager.get_or_create("later", 0).directory.parent == dirs[1]
    assert manager.get_or_create("later", 1).directory.parent == dirs[0]
    manager.close()


def test_describe_log_dirs_shows_the_future_replica_and_alter_answers_as_kafka(tmp_path):
    from simplekafka.broker.apis.log_dirs import AlterReplicaLogDirsHandler, _result
    from simplekafka.broker.metadata_cache import MetadataCache
    from simplekafka.broker.replica_manager import ReplicaManager
    from simplekafka.protocol.errors import ErrorCode

    dirs, manager, partition, clock, _ = setup(tmp_path)
    append(partition, 30)
    replicas = ReplicaManager(1, manager, MetadataCache(), reactor=clock)
    replicas.partitions[KEY] = partition
    replicas.log_dir_mover.chunk_bytes = 2048
    b = str(dirs[1].absolute())
    answer = AlterReplicaLogDirsHandler(replicas)(None, {"dirs": [
        {"path": b, "topics": [{"name": "orders", "partitions": [0, 7]}]},
        {"path": "/elsewhere", "topics": [{"name": "other", "partitions": [0]}]}]})
    codes = {(t["topic_name"], p["partition_index"]): p["error_code"]
             for t in answer["results"] for p in t["partitions"]}
    assert codes == {("orders", 0): ErrorCode.NONE,
                     ("orders", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                     ("other", 0): ErrorCode.LOG_DIR_NOT_FOUND}
    replicas.log_dir_mover.step()  # one chunk: the future replica lags
    described = {d.path: _result(d) for d in replicas.describe_log_dirs(None)}
    (future,) = described[b]["topics"][0]["partitions"]
    assert future["is_future_key"] and future["offset_lag"] > 0
    (current,) = described[str(dirs[0].absolute())]["topics"][0]["partitions"]
    assert not current["is_future_key"] and current["partition_size"] == partition.log.size
    clock.advance(1)  # the rest, and the swap
    clock.advance(1)
    described = {d.path: _result(d) for d in replicas.describe_log_dirs(None)}
    assert described[str(dirs[0].absolute())]["topics"] == []
    assert described[b]["topics"][0]["partitions"][0]["is_future_key"] is False
    replicas.log_dir_mover.stop()


def test_a_restarted_broker_resumes_the_move_when_leader_and_isr_brings_the_partition(
        tmp_path):

    from simplekafka.broker.metadata_cache import MetadataCache
    from simplekafka.broker.replica_manager import ReplicaManager

    dirs, manager, partition, clock, mover = setup(tmp_path)
    append(partition, 40)
    manager.create_future(*KEY, dirs[1])
    mover.step()  # part of it, then the broker stops
    expected = everything(partition.log)
    manager.close()
    again = LogManager(dirs, LogConfig(segment_bytes=4096))
    replicas = ReplicaManager(1, again, MetadataCache(), reactor=clock)
    state = dict(topic_name="orders", partition_index=0, leader=1, leader_epoch=4,
                            isr=[1], replicas=[1], zk_version=0, controller_epoch=1)
    replicas.become_leader_or_follower(dict(
        controller_epoch=1, controller_id=1, topic_states=[],
        ungrouped_partition_states=[state]))
    run(clock, 20)
    moved = replicas.partitions[KEY]
    assert moved.log.directory == dirs[1] / "orders-0" and not again.futures
    assert everything(moved.log) == expected
    replicas.shutdown()
    again.close()
