"""The exercises, stage by stage: what the learner writes, the goal, and the check."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from simplekafka.learn.checks import stage1, stage3, stage4, stage7

Check = Callable[[ModuleType, Path], None]


@dataclass(frozen=True)
class Exercise:
    number: int
    title: str
    goal: str
    functions: tuple[str, ...]  # what the learner writes: functions, or Class.method
    check: Check


@dataclass(frozen=True)
class Stage:
    number: int
    title: str
    module: str  # the learner's module (and the solution's) without .py
    chapter: str
    exercises: tuple[Exercise, ...]

    def exercise(self, number: int) -> Exercise:
        for exercise in self.exercises:
            if exercise.number == number:
                return exercise
        raise KeyError(number)


STAGES: dict[int, Stage] = {
    1: Stage(1, "The wire protocol", "stage1_protocol", "stages/stage1_protocol/README.md", (
        Exercise(1, "varints",
                 "encode and decode the zigzag varints of Kafka's records",
                 ("encode_varint", "decode_varint"), stage1.check_varints),
        Exercise(2, "request header and ApiVersions",
                 "write a request header v1 and the ApiVersions v0 answer, byte for byte",
                 ("encode_request_header", "encode_api_versions_response"),
                 stage1.check_header_and_api_versions),
        Exercise(3, "RecordBatch v2",
                 "encode records and a RecordBatch v2 with its CRC-32C",
                 ("encode_record", "encode_record_batch"), stage1.check_record_batch),
    )),
    3: Stage(3, "The log on disk", "stage3_storage", "stages/stage3_storage/README.md", (
        Exercise(1, "append and lookup",
                 "append batches to a segment, keep a sparse index, look offsets up through it",
                 ("Segment.append", "Segment.lookup", "Segment.read"),
                 stage3.check_append_and_lookup),
        Exercise(2, "recovery",
                 "after a crash, cut a torn or corrupt tail off and rebuild the index",
                 ("Segment.recover",), stage3.check_recovery),
    )),
    4: Stage(4, "Your own broker", "stage4_broker", "stages/stage4_broker/README.md", (
        Exercise(1, "ApiVersions",
                 "say which APIs and versions your broker speaks",
                 ("Broker.api_versions",), stage4.check_api_versions),
        Exercise(2, "Metadata",
                 "describe your broker and its topics: kcat -L works",
                 ("Broker.metadata",), stage4.check_metadata),
        Exercise(3, "Produce",
                 "append producers' batches to the log: kcat -P works",
                 ("Broker.produce",), stage4.check_produce),
        Exercise(4, "Fetch",
                 "serve batches to consumers: kcat -C and confluent-kafka round trips work",
                 ("Broker.fetch",), stage4.check_fetch),
    )),
    7: Stage(7, "Replication rules", "stage7_replication", "stages/stage7_cluster/README.md", (
        Exercise(1, "high watermark",
                 "the HW as the lowest log end offset over the ISR",
                 ("high_watermark",), stage7.check_high_watermark),
        Exercise(2, "ISR shrink and join",
                 "which followers leave the ISR and when one may join",
                 ("out_of_sync_replicas", "may_join_isr"), stage7.check_isr_rules),
        Exercise(3, "truncation by leader epoch",
                 "answer OffsetsForLeaderEpoch and truncate by it: KIP-101's scenarios hold",
                 ("end_offset_for_epoch", "truncation_offset"),
                 stage7.check_truncation_by_epoch),
    )),
}
