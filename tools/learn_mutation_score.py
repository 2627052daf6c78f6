#!/usr/bin/env python3
"""How many of a real mutation tool's mutants do the learner checks kill, per exercise?

The learner checks (``simplekafka learn check``) are only as good as the
mistakes they catch. This tool takes cosmic-ray's mutation operators (the
library, not its CLI and database) and applies them, one occurrence at a time,
to the bodies of each exercise's functions in the REFERENCE solution
(``simplekafka/learn/solutions/<module>.py``); everything else in the module
is left alone. Each mutant is written as the learner's module in a fresh
temporary directory and that one exercise's check runs against it, exactly as
``simplekafka learn check STAGE DIR --exercise E`` would (progress lands in the
temporary directory). A mutant is killed when the check fails or overruns a
short time limit; it survived when the check passes.

Prints a Markdown table per exercise (mutants, killed, score) with how and
when each figure was taken, and writes every survivor (its diff and a
one-line reason from SURVIVOR_REASONS, or "unexplained") to
docs/learn-mutants.md (``--out``).

    python tools/learn_mutation_score.py                       # every stage
    python tools/learn_mutation_score.py --stage 1 --stage 7   # some stages
    python tools/learn_mutation_score.py --stage 1 --sample 5  # CI's reduced size
    python tools/learn_mutation_score.py --skip-real           # no process-starting stages
    python tools/learn_mutation_score.py --stage 6 --sample-real 20 --full 6/1  # 6/1 whole

Checks run in worker processes (``--jobs``), each mutant under the check's own
SIGALRM limit and, behind it, a hard deadline after which the worker and its
process group are killed (a mutant stuck in C code, say ``2 ** 2 ** 40``,
ignores signals) and the mutant counts as killed by a time-out.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import difflib
import json
import os
import platform
import queue
import random
import resource
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # this checkout's simplekafka, however the tool is started

DEFAULT_OUT = ROOT / "docs" / "learn-mutants.md"
SOLUTIONS = ROOT / "simplekafka" / "learn" / "solutions"
EXCEPTION_NAME = "CosmicRayTestingException"  # cosmic-ray's ExceptionReplacer puts this in
MEMORY_LIMIT = 2 << 30  # address space of a pure stage's worker: a mutant may allocate wildly

# Why each surviving mutant is equivalent (no input can tell it from the reference)
# or harmless (it differs only where the contract leaves the answer free), keyed by
# the mutant's stable id: stage/exercise/function/operator/occurrence, where the
# occurrence counts that operator's places within that function only, so edits
# elsewhere in the solution do not shift it.
_NO_EMPTY_BATCH = ("equivalent: a SimpleKafka batch holds at least one record (build_batch "
                   "refuses none), so it is longer than its 61-byte header and exactly 61 bytes "
                   "never remain at a batch's start in a segment of whole batches")
_FIRST_BATCH_WHOLE = ("equivalent: Log.read gives the first batch whole whatever max_bytes "
                      "(KIP-74), so max(partition_max_bytes, 0, 1 or 2) reads the same bytes")
_EPOCH_MINUS_ONE = ("equivalent: an answer with epoch -1 reaches the later branches as (-1, end), "
                    "where the follower's own end of epoch -1 is unknown and falls back to the "
                    "leader's end: every branch cuts at the leader's end")
_END_ZERO = ("equivalent: a leader's end of 0 is cut at 0 by every branch (min with anything "
             "not negative); an (epoch >= 0, -1) answer, the only other difference, is never "
             "given (end_offset_for pairs -1 with -1)")
_ASKED_EPOCH = ("equivalent: the leader never answers an epoch newer than the one asked, and "
                "when it answers the asked (the follower's latest) epoch, the else branch's own "
                "end of it is the follower's log end: min(leader's end, log end) either way")
_OWN_PAIR = ("equivalent: the follower's end_offset_for gives -1 for the epoch exactly when it "
             "gives -1 for the end, so either half of the test decides alone")
_WORD_ALIGNED = ("equivalent: whole is a multiple of 4, so its two low bits are clear and "
                 "whole | 1, whole ^ 1 (or 2) are whole + 1 (or 2)")
_ERROR_CODE_MEMBER = ("equivalent: code is ErrorCode.of(...), always an ErrorCode member (an "
                      "unknown number maps to UNKNOWN_SERVER_ERROR), and an enum's members are "
                      "singletons, so `is` answers as == does")
_MIN_TIE = ("equivalent: on a tie (the offset equals lso) `<=` sets lso to the value it "
            "already has")
_NEGATIVE = ("unobservable here: code > NONE differs from != only for a negative code, and "
             "the one negative code, UNKNOWN_SERVER_ERROR (-1), the real coordinator and "
             "partition leader the check runs against send only on an internal failure the "
             "check cannot provoke (the refusals it provokes, INVALID_REQUEST, "
             "OUT_OF_ORDER_SEQUENCE_NUMBER, PRODUCER_FENCED, are positive)")
_SMALL_INT = ("equivalent: -2 and -1 are in CPython's small-int cache (-5 to 256), so every "
              "-2 (or -1) is the same object and `is` answers as == does")
_BELOW_MINUS_TWO = ("unobservable: differs only for an offset below -2, which "
                    "parse_source_options refuses (startingOffsets' offsets must be integers "
                    ">= -2), so resolve never sees one")
_NO_BACKLOG_SHARE = ("equivalent: a partition with a start and a backlog <= 0 that reaches the "
                     "share rule ends at min(end, start + ceil(limit * backlog / total)); with "
                     "total > limit that share lies between the backlog and 0, so the min is "
                     "end (start itself at a backlog of 0), as keeping end gives; a partition "
                     "without a start has backlog end - end = 0, so `begin is None` never "
                     "decides alone")
_ZERO_BACKLOGS = ("equivalent: the backlogs it adds to the total are 0 (a partition without a "
                  "start, or caught up), which change no sum")
_PAST_POSITION = ("equivalent: a Fetch at position answers whole batches beginning with the one "
                  "that holds position (Log.read), so no batch of the answer ends at or before "
                  "position and the skip never runs")
_AT_END = ("equivalent: when a batch takes position past end without returning, the answer's "
           "later batches hold only offsets past end (the inner loop breaks at its first record, "
           "a control batch yields nothing), and the while test stops before another fetch")
SURVIVOR_REASONS: dict[str, str] = {
    # stage 1
    "1/1/encode_varint/NumberReplacer/2": (
        "equivalent: for every value in int64's range (the contract's), v >> 63 and v >> 64 "
        "are both 0 or -1"),
    "1/1/encode_varint/ReplaceBinaryOperator_BitOr_Add/0": (
        "equivalent: zigzag & 0x7F is below 0x80, so adding 0x80 sets the same bit as or"),
    "1/1/encode_varint/ReplaceBinaryOperator_BitOr_BitXor/0": (
        "equivalent: zigzag & 0x7F has bit 7 clear, so xor with 0x80 sets it as or does"),
    "1/4/encode_unsigned_varint/ReplaceBinaryOperator_BitOr_Add/0": (
        "equivalent: value & 0x7F is below 0x80, so adding 0x80 sets the same bit as or"),
    "1/4/encode_unsigned_varint/ReplaceBinaryOperator_BitOr_BitXor/0": (
        "equivalent: value & 0x7F has bit 7 clear, so xor with 0x80 sets it as or does"),
    # stage 3
    "3/1/Segment.lookup/ReplaceComparisonOperator_LtE_Lt/0": _NO_EMPTY_BATCH,
    "3/1/Segment.read/ReplaceComparisonOperator_LtE_Lt/0": _NO_EMPTY_BATCH,
    "3/1/Segment.read/ReplaceComparisonOperator_Gt_NotEq/1": (
        "equivalent: end starts at position and only grows, so end != position is end > position"),
    "3/1/Segment.read/ReplaceComparisonOperator_Gt_IsNot/1": (
        "equivalent: end is bound to position's own int object until it first grows, then "
        "it is larger, so `is not` answers as > does"),
    "3/2/Segment.recover/ReplaceComparisonOperator_LtE_Lt/0": (
        "equivalent: with exactly 61 bytes left the reference reads a header whose batch runs "
        "past the end (a batch has records) and stops there; the mutant stops one step earlier, "
        "at the same position"),
    "3/2/Segment.recover/ReplaceComparisonOperator_Lt_LtE/0": (
        "equivalent: end == position + 61 is a batch of nothing but its header, which SimpleKafka "
        "never writes (build_batch needs a record); such a tail is cut either way"),
    # stage 4
    "4/2/Connection.answer/ReplaceComparisonOperator_Eq_GtE/0": (
        "equivalent: ApiVersions (18) is the largest key in VERSIONS and a key not in VERSIONS "
        "was refused just before, so api_key >= 18 is api_key == 18"),
    "4/6/Broker.fetch/NumberReplacer/10": _FIRST_BATCH_WHOLE,
    "4/6/Broker.fetch/NumberReplacer/11": _FIRST_BATCH_WHOLE,
    # stage 5
    "5/2/ConnectionCore._decode/ReplaceComparisonOperator_Eq_Is/0": (
        "equivalent: request.api_key is always an ApiKey member (send_request stores "
        "ApiKey(api_key), the core's own requests ApiKey.API_VERSIONS or a SASL key), and an "
        "enum's members are singletons, so `is` answers as == does"),
    # stage 6
    "6/1/murmur2/ReplaceBinaryOperator_BitAnd_Mod/0": (
        "equivalent: SEED ^ length is below MASK32 (so % MASK32 leaves it as & does) for every "
        "length but 0x68b84d73 (1.75 GB), far beyond any key a record can hold"),
    "6/1/murmur2/ReplaceBinaryOperator_Sub_BitXor/0": (
        "equivalent: length % 4 is length's two low bits, so xor clears them as - does"),
    "6/1/murmur2/ReplaceBinaryOperator_Sub_BitXor/1": (
        "equivalent: whole is length with its two low bits cleared, so length ^ whole is "
        "those two bits, length - whole"),
    "6/1/murmur2/NumberReplacer/6": (
        "equivalent: a fifth byte adds b * 2**32 to k, and (k * M) & MASK32 drops it"),
    "6/1/murmur2/ReplaceComparisonOperator_Eq_GtE/0": (
        "equivalent: left is length % 4, never above 3"),
    "6/1/murmur2/ReplaceBinaryOperator_Add_BitOr/1": _WORD_ALIGNED,
    "6/1/murmur2/ReplaceBinaryOperator_Add_BitXor/1": _WORD_ALIGNED,
    "6/1/murmur2/ReplaceBinaryOperator_Add_BitOr/2": _WORD_ALIGNED,
    "6/1/murmur2/ReplaceBinaryOperator_Add_BitXor/2": _WORD_ALIGNED,
    "6/2/Accumulator.ready/NumberReplacer/3": (
        "equivalent: with more than one batch queued the first test decides (the head is not "
        "read), and with one, queue[-1] is queue[0]"),
    "6/2/Accumulator.ready/ReplaceComparisonOperator_Gt_NotEq/0": (
        "equivalent: empty queues are skipped just before, so len(queue) != 1 is len(queue) > 1"),
    "6/3/Member.join/ReplaceComparisonOperator_Eq_Is/0": _ERROR_CODE_MEMBER,
    "6/3/Member.join/ReplaceComparisonOperator_Eq_Is/1": _ERROR_CODE_MEMBER,
    "6/3/Member.join/ReplaceComparisonOperator_NotEq_IsNot/0": _ERROR_CODE_MEMBER,
    "6/3/Member.join/ReplaceComparisonOperator_Eq_Is/3": _ERROR_CODE_MEMBER,
    "6/3/Member.join/ReplaceComparisonOperator_NotEq_IsNot/1": _ERROR_CODE_MEMBER,
    "6/3/Member.heartbeat/ReplaceComparisonOperator_Eq_Is/0": _ERROR_CODE_MEMBER,
    "6/3/Member.heartbeat/ReplaceComparisonOperator_Eq_Is/1": _ERROR_CODE_MEMBER,
    # stage 8
    "8/1/ClusterView.resolve/ReplaceComparisonOperator_Eq_LtE/0": (
        "equivalent: in this branch kind is \"earliest\" or \"latest\", and \"latest\" > "
        "\"earliest\", so <= picks out \"earliest\" as == does"),
    "8/1/ClusterView.resolve/ReplaceComparisonOperator_Eq_LtE/1": _BELOW_MINUS_TWO,
    "8/1/ClusterView.resolve/ReplaceComparisonOperator_Eq_LtE/2": _BELOW_MINUS_TWO,
    "8/1/ClusterView.resolve/ReplaceComparisonOperator_Eq_Is/1": _SMALL_INT,
    "8/1/ClusterView.resolve/ReplaceComparisonOperator_Eq_Is/2": _SMALL_INT,
    "8/2/rate_limit/ReplaceComparisonOperator_Gt_GtE/0": _ZERO_BACKLOGS,
    "8/2/rate_limit/NumberReplacer/1": _ZERO_BACKLOGS,
    "8/2/rate_limit/ReplaceComparisonOperator_LtE_Eq/0": (
        "equivalent: when total < limit every share limit * (backlog / total) exceeds its "
        "backlog by backlog / total, far more than floating point's error, so each partition "
        "is capped at its end, as returning end does"),
    "8/2/rate_limit/ReplaceOrWithAnd/0": _NO_BACKLOG_SHARE,
    "8/2/rate_limit/ReplaceComparisonOperator_LtE_Eq/1": _NO_BACKLOG_SHARE,
    "8/2/rate_limit/ReplaceComparisonOperator_LtE_Lt/1": _NO_BACKLOG_SHARE,
    "8/2/rate_limit/NumberReplacer/3": _NO_BACKLOG_SHARE,
    "8/2/rate_limit/NumberReplacer/2": (
        "equivalent: a backlog of 1 capped gets the share limit / total, in (0, 1) "
        "(maxOffsetsPerTrigger is positive and total > limit here), rounded up to 1: it ends "
        "at start + 1, its end, either way"),
    "8/2/rate_limit/ReplaceComparisonOperator_Lt_LtE/0": (
        "equivalent: at a share of exactly 1, ceil and floor both give 1"),
    "8/3/read_range/ReplaceComparisonOperator_Lt_IsNot/0": (
        "unobservable: a position at or past end returns inside the loop, so the loop's test "
        "decides only before the first fetch; there start < end (start is not end) in every "
        "range Spark asks for (plan_ranges leaves empty ones out), and the check's start == end "
        "ranges are below 257, where CPython caches ints, so start is end"),
    "8/3/read_range/NumberReplacer/3": (
        "equivalent: the Fetch asks for one partition, so its answer has one and "
        "partitions[-1] is partitions[0]"),
    "8/3/read_range/ReplaceComparisonOperator_NotEq_Gt/0": (
        "unobservable here: error_code > NONE differs from != only for a negative code, and "
        "the one negative code, UNKNOWN_SERVER_ERROR (-1), the broker sends only on an internal "
        "failure the check cannot provoke"),
    "8/3/read_range/ReplaceContinueWithBreak/0": _PAST_POSITION,
    "8/3/read_range/ReplaceComparisonOperator_LtE_Is/0": _PAST_POSITION,
    "8/3/read_range/ReplaceBreakWithContinue/0": (
        "equivalent: a batch's records come in offset order, so once one is at or past end "
        "every later one is too: skipping each of them (continue) yields what stopping does"),
    "8/3/read_range/ReplaceComparisonOperator_GtE_Eq/1": _AT_END,
    "8/3/read_range/ReplaceComparisonOperator_GtE_Is/1": _AT_END,
    # stage 9
    "9/1/ProducerStateTable.last_stable_offset/ReplaceComparisonOperator_Lt_LtE/0": _MIN_TIE,
    "9/1/ProducerStateTable.last_stable_offset/ReplaceComparisonOperator_Lt_LtE/1": _MIN_TIE,
    "9/2/AbortedFilter.drops/NumberReplacer/1": (
        "equivalent: a batch without a producer has producer id -1 (no other negative id is "
        "written); such a batch is neither control nor transactional, so it is kept either "
        "way, and the aborted transactions its offset moves into aborting the next batch "
        "would move anyway (offsets only grow)"),
    "9/2/AbortedFilter.drops/NumberReplacer/11": (
        "equivalent: a control batch holds exactly one record (its marker), so records[-1] "
        "is records[0]"),
    "9/2/AbortedFilter.drops/ReplaceAndWithOr/1": (
        "equivalent: a control batch has its marker record, so marker is never None; and at "
        "a COMMIT marker its producer is not aborting (one transaction at a time: an aborted "
        "one of the same producer begins after this marker), so discarding it is a no-op"),
    "9/3/TransactionalProducer.init_transactions/ReplaceComparisonOperator_NotEq_Gt/0": _NEGATIVE,
    "9/3/TransactionalProducer.send/ReplaceComparisonOperator_NotEq_Gt/0": _NEGATIVE,
    "9/3/TransactionalProducer.send/NumberReplacer/7": (
        "equivalent: the Produce carries one topic, so its answer has one response and "
        "responses[-1] is responses[0]"),
    # stage 7
    "7/2/out_of_sync_replicas/ReplaceUnaryOperator_USub_Invert/0": (
        "equivalent: a follower that has not fetched is below the leader's LEO (never "
        "negative) with a default of -1 or ~1 (-2) alike"),
    "7/2/out_of_sync_replicas/NumberReplacer/0": (
        "equivalent: a follower that has not fetched is below the leader's LEO (never "
        "negative) with a default of -1 or -2 alike"),
    "7/3/truncation_offset/NumberReplacer/1": _EPOCH_MINUS_ONE,
    "7/3/truncation_offset/ReplaceOrWithAnd/0": _EPOCH_MINUS_ONE,
    "7/3/truncation_offset/ReplaceComparisonOperator_Lt_Eq/1": _END_ZERO,
    "7/3/truncation_offset/ReplaceComparisonOperator_Lt_LtE/1": _END_ZERO,
    "7/3/truncation_offset/NumberReplacer/2": _END_ZERO,
    "7/3/truncation_offset/NumberReplacer/3": (
        "equivalent: an end of -1 comes only with epoch -1 (end_offset_for pairs them), "
        "which the first test catches anyway"),
    "7/3/truncation_offset/ReplaceComparisonOperator_Eq_Gt/0": _ASKED_EPOCH,
    "7/3/truncation_offset/ReplaceComparisonOperator_Eq_GtE/0": _ASKED_EPOCH,
    "7/3/truncation_offset/ReplaceComparisonOperator_Eq_Is/0": _ASKED_EPOCH,
    "7/3/truncation_offset/NumberReplacer/7": _OWN_PAIR,
    "7/3/truncation_offset/ReplaceOrWithAnd/1": _OWN_PAIR,
    "7/3/truncation_offset/NumberReplacer/9": _OWN_PAIR,
}


# --- mutants ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class MutantSpec:
    """One cosmic-ray mutation of one exercise function's body."""

    id: str
    stage: int
    exercise: int
    function: str
    operator: str  # cosmic-ray's full name, core/...
    occurrence: int  # cosmic-ray's occurrence index over the whole module
    line: int
    source: str  # the whole mutated module
    diff: str


def function_bodies(source: str, names: Iterable[str]) -> dict[str, tuple[int, int]]:
    """(first, last) line of each named function's body, its docstring left out.

    Names are as in Exercise.functions: ``f`` for a top-level function,
    ``Class.method`` for a method of a top-level class (as the skeleton cuts them).
    """
    import ast

    found: dict[str, ast.FunctionDef] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    found[f"{node.name}.{item.name}"] = item
    spans = {}
    for name in names:
        if name not in found:
            raise SystemExit(f"the solution has no function {name}")
        body = found[name].body
        if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            body = body[1:]
        if body:
            spans[name] = (body[0].lineno, body[-1].end_lineno or body[-1].lineno)
    return spans


def _operators() -> list[tuple[str, object]]:
    """cosmic-ray's core operators that need no arguments, instantiated, in its order."""
    from cosmic_ray.plugins import get_operator, operator_names

    chosen = []
    for name in operator_names():
        cls = get_operator(name)
        if cls.arguments():  # VariableReplacer/Inserter need a named cause and effect
            continue
        chosen.append((name, cls()))
    return chosen


@dataclasses.dataclass(frozen=True)
class Place:
    """Where one operator can mutate an exercise body: a mutant before it is made."""

    id: str
    stage: int
    exercise: int
    function: str
    operator: str
    occurrence: int  # cosmic-ray's occurrence index over the whole module
    line: int


def find_places(stage_number: int, exercise_number: int, functions: Sequence[str],
                source: str) -> list[Place]:
    """Every place in the functions' bodies where a cosmic-ray operator applies."""
    from cosmic_ray.ast import Visitor, get_ast

    spans = function_bodies(source, functions)
    operators = _operators()
    counts = {name: 0 for name, _ in operators}
    found: list[tuple[str, int, int]] = []  # operator, occurrence, line

    class Count(Visitor):
        def visit(self, node):  # the order cosmic-ray's MutationVisitor counts in
            for name, operator in operators:
                for (start, _end) in operator.mutation_positions(node):
                    found.append((name, counts[name], start[0]))
                    counts[name] += 1
            return node

    Count().walk(get_ast(source))
    places = []
    within: dict[tuple[str, str], int] = {}
    for name, occurrence, line in found:
        function = next((f for f, (first, last) in spans.items() if first <= line <= last), None)
        if function is None:
            continue
        short = name.split("/", 1)[1]
        k = within.get((function, short), 0)
        within[(function, short)] = k + 1
        places.append(Place(f"{stage_number}/{exercise_number}/{function}/{short}/{k}",
                            stage_number, exercise_number, function, name, occurrence, line))
    return places


def materialize(place: Place, source: str, module_name: str) -> MutantSpec | None:
    """The mutated module for one place; None when it changes nothing or does not compile."""
    from cosmic_ray.mutating import mutate_code
    from cosmic_ray.plugins import get_operator

    mutated = mutate_code(source, get_operator(place.operator)(), place.occurrence)
    if mutated is None or mutated == source:
        return None
    try:
        compile(mutated, f"{module_name}.py", "exec")
    except SyntaxError:
        return None
    diff = "".join(difflib.unified_diff(
        source.splitlines(keepends=True), mutated.splitlines(keepends=True),
        f"a/{module_name}.py", f"b/{module_name}.py", n=2))
    if EXCEPTION_NAME in mutated:  # defined at the end: every line keeps its number
        mutated += f"\nfrom cosmic_ray.exceptions import {EXCEPTION_NAME}  # noqa: E402\n"
    return MutantSpec(place.id, place.stage, place.exercise, place.function, place.operator,
                      place.occurrence, place.line, mutated, diff)


def enumerate_mutants(stage_number: int, exercise_number: int, functions: Sequence[str],
                      source: str, module_name: str) -> tuple[list[MutantSpec], int]:
    """Every mutant of the functions' bodies; and how many were left out (no compile, no change)."""
    mutants, left_out = [], 0
    for place in find_places(stage_number, exercise_number, functions, source):
        mutant = materialize(place, source, module_name)
        if mutant is None:
            left_out += 1
        else:
            mutants.append(mutant)
    return mutants, left_out


# --- the worker: runs one exercise's check against one module source ----------------------


def worker_main() -> None:
    """Read jobs (JSON lines) on stdin, answer each with a JSON line on the original stdout."""
    answer = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # what a check or a mutant prints must not garble the answers
    sys.stdout = sys.stderr
    if os.environ.get("LEARN_MUTATION_MEMORY_LIMIT"):
        limit = int(os.environ["LEARN_MUTATION_MEMORY_LIMIT"])
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    from simplekafka.learn import runner
    from simplekafka.learn.catalog import STAGES

    for line in sys.stdin:
        job = json.loads(line)
        stage = STAGES[job["stage"]]
        # A short limit for this exercise only: runner.check looks the stage up here.
        STAGES[stage.number] = dataclasses.replace(stage, exercises=tuple(
            dataclasses.replace(e, time_limit=job["time_limit"]) if e.number == job["exercise"]
            else e for e in stage.exercises))
        directory = Path(tempfile.mkdtemp(prefix=f"mutant-s{stage.number}e{job['exercise']}-"))
        began = time.monotonic()
        try:
            (directory / f"{stage.module}.py").write_text(job["source"])
            result = runner.check(stage.number, directory, only=job["exercise"])
            killed = not result.ok
            why = result.report[1].strip() if len(result.report) > 1 else ""
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # SystemExit from a mutant, say: the check did not pass
            killed, why = True, f"{type(exc).__name__} outside the check: {exc}"
        finally:
            STAGES[stage.number] = stage
            shutil.rmtree(directory, ignore_errors=True)
        answer.write(json.dumps({"killed": killed, "why": why[:300],
                                 "seconds": time.monotonic() - began}) + "\n")


class Worker:
    """A ``--worker`` process in its own session, restarted after a hard time-out."""

    def __init__(self, stderr_path: Path, memory_limit: int | None):
        self.stderr_path = stderr_path
        self.memory_limit = memory_limit
        self.process: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
        if self.memory_limit:
            env["LEARN_MUTATION_MEMORY_LIMIT"] = str(self.memory_limit)
        with open(self.stderr_path, "ab") as stderr:
            return subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker"],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=stderr, env=env, start_new_session=True)

    def run(self, job: dict, deadline: float) -> dict:
        """Send one job; its answer, or a killed-by-time-out verdict after ``deadline`` s."""
        if self.process is None or self.process.poll() is not None:
            self.process = self._start()
        assert self.process.stdin is not None and self.process.stdout is not None
        began = time.monotonic()
        try:
            self.process.stdin.write((json.dumps(job) + "\n").encode())
            self.process.stdin.flush()
            ready, _, _ = select.select([self.process.stdout], [], [], deadline)
            line = self.process.stdout.readline() if ready else b""
        except (BrokenPipeError, OSError):
            line = b""
        if line:
            return json.loads(line)
        timed_out = self.process.poll() is None
        self.stop()
        seconds = time.monotonic() - began
        if timed_out:
            return {"killed": True, "why": f"hard time-out after {deadline:g} s (worker killed)",
                    "seconds": seconds}
        return {"killed": True, "why": "the worker process died (the mutant crashed it)",
                "seconds": seconds}

    def stop(self) -> None:
        """End this worker and whatever it started (its own process group)."""
        if self.process is None:
            return
        try:  # the group too: a worker that is gone may have left brokers behind
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        self.process = None


# --- the run ---------------------------------------------------------------------------------


@dataclasses.dataclass
class ExerciseResult:
    stage: int
    exercise: int
    title: str
    total: int  # mutants generated
    ran: int  # mutants run (a sample of the total, or all)
    killed: int = 0
    timeouts: int = 0
    survivors: list[MutantSpec] = dataclasses.field(default_factory=list)
    broken: int = 0  # did not compile: left out
    seconds: float = 0.0
    time_limit: float = 0.0
    started: str = ""
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)
    reference_seconds: float = 0.0
    error: str = ""  # the reference failed its own check: no mutant was run

    @property
    def explained(self) -> int:
        return sum(1 for m in self.survivors if m.id in SURVIVOR_REASONS)

    @property
    def score(self) -> float:
        return 100.0 * self.killed / self.ran if self.ran else 100.0

    @property
    def adjusted(self) -> float:
        """Killed over the mutants that are not explained equivalent or harmless."""
        real = self.ran - self.explained
        return 100.0 * self.killed / real if real else 100.0


def run_jobs(workers: list[Worker], jobs: list[tuple[dict, float]]) -> list[dict]:
    """Run (job, deadline) pairs over the workers in parallel; answers in job order."""
    answers: list[dict] = [{}] * len(jobs)
    todo: queue.Queue = queue.Queue()
    for index, job in enumerate(jobs):
        todo.put((index, job))

    def slot(worker: Worker) -> None:
        while True:
            try:
                index, (job, deadline) = todo.get_nowait()
            except queue.Empty:
                return
            answers[index] = worker.run(job, deadline)

    threads = [threading.Thread(target=slot, args=(w,), daemon=True) for w in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def score_exercise(stage: Any, exercise: Any, source: str, args: argparse.Namespace,
                   workers: list[Worker], log: Callable[[str], None]) -> ExerciseResult:
    """Run the exercise's mutants (or a seeded sample) against its check, the reference first."""
    places = find_places(stage.number, exercise.number, exercise.functions, source)
    sample = args.sample_real if stage.real_processes and args.sample_real else args.sample
    if f"{stage.number}/{exercise.number}" in (getattr(args, "full", None) or ()):
        sample = 0  # a pure or fast exercise in a stage whose other checks start processes
    order = list(range(len(places)))
    if sample and sample < len(places):  # a seeded shuffle, made into mutants until K are
        random.Random(f"{args.seed}/{stage.number}/{exercise.number}").shuffle(order)
    chosen: list[tuple[int, MutantSpec]] = []
    broken = 0
    for index in order:
        if sample and len(chosen) == sample:
            break
        mutant = materialize(places[index], source, stage.module)
        if mutant is None:
            broken += 1
        else:
            chosen.append((index, mutant))
    chosen_mutants = [mutant for _index, mutant in sorted(chosen, key=lambda pair: pair[0])]
    # In a sample, places not made into mutants count as mutants (a few may not compile).
    total = len(places) - broken
    result = ExerciseResult(stage.number, exercise.number, exercise.title, total,
                            len(chosen_mutants), broken=broken)
    result.started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    result.load_before = os.getloadavg()
    began = time.monotonic()
    # The reference first: it must pass, and its time sets the mutants' limit.
    generous = exercise.time_limit
    reference = workers[0].run({"stage": stage.number, "exercise": exercise.number,
                                "source": source, "time_limit": generous}, generous + 60)
    if reference["killed"]:
        result.error = f"the reference fails its own check: {reference['why']}"
        result.ran = 0
        log(f"stage {stage.number} exercise {exercise.number}: {result.error}")
        result.seconds = time.monotonic() - began
        result.load_after = os.getloadavg()
        return result
    result.reference_seconds = reference["seconds"]
    if args.time_limit:
        limit = args.time_limit
    elif stage.real_processes and reference["seconds"] >= 1.0:
        limit = min(generous, max(30.0, 3 * reference["seconds"]))
    # A check done within a second starts no processes (a pure exercise of a stage whose
    # other checks do): a pure check's limit, so a mutant looping forever costs 5 s, not 30.
    else:
        limit = max(5.0, 20 * reference["seconds"])
    result.time_limit = limit
    grace = 60.0 if stage.real_processes else 10.0
    log(f"stage {stage.number} exercise {exercise.number} ({exercise.title}): "
        f"{len(chosen_mutants)} of {total} mutants, reference {reference['seconds']:.2f} s, "
        f"limit {limit:.1f} s")
    jobs = [({"stage": stage.number, "exercise": exercise.number, "source": m.source,
              "time_limit": limit}, limit + grace) for m in chosen_mutants]
    answers = run_jobs(workers, jobs)
    for mutant, answer in zip(chosen_mutants, answers):
        if answer["killed"]:
            result.killed += 1
            if "time-out" in answer["why"] or "did not return within" in answer["why"] \
                    or "did not finish within" in answer["why"]:
                result.timeouts += 1
        else:
            result.survivors.append(mutant)
        if args.verbose:
            log(f"  {'killed  ' if answer['killed'] else 'SURVIVED'} {mutant.id} "
                f"({answer['seconds']:.2f} s) {answer['why'][:120]}")
    result.seconds = time.monotonic() - began
    result.load_after = os.getloadavg()
    return result


def _load(values: tuple[float, float, float]) -> str:
    return f"{values[0]:.2f}"


def table(results: list[ExerciseResult]) -> str:
    lines = ["| stage | exercise | mutants | killed | survived (explained) | score % "
             "| w/o explained % | taken |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        if r.error:
            lines.append(f"| {r.stage} | {r.exercise} {r.title} | {r.total} | - | - | - | - "
                         f"| {r.started}: {r.error[:200].replace('|', '/')} |")
            continue
        size = f"{r.ran}" if r.ran == r.total else f"{r.ran} of {r.total}"
        taken = (f"{r.started}, {r.seconds:.0f} s, limit {r.time_limit:.1f} s, "
                 f"load {_load(r.load_before)}→{_load(r.load_after)}")
        lines.append(f"| {r.stage} | {r.exercise} {r.title} | {size} | {r.killed} "
                     f"({r.timeouts} by time-out) | {len(r.survivors)} ({r.explained}) "
                     f"| {r.score:.1f} | {r.adjusted:.1f} | {taken} |")
    return "\n".join(lines)


def preamble(args: argparse.Namespace, argv: Sequence[str]) -> list[str]:
    import importlib.metadata

    command = "python tools/learn_mutation_score.py" + "".join(
        f" {shlex.quote(a)}" for a in argv)
    return [
        f"Command: `{command}`",
        f"Taken: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC on "
        f"{platform.node() or 'this machine'} ({os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, cosmic-ray {importlib.metadata.version('cosmic-ray')}), "
        f"{args.jobs} worker process(es), load average at the start "
        f"{' '.join(f'{v:.2f}' for v in os.getloadavg())} (1, 5, 15 min)",
    ]


def survivors_markdown(results: list[ExerciseResult], head: list[str]) -> str:
    out = [
        "# Surviving mutants of the learner checks",
        "",
        "Written by `tools/learn_mutation_score.py`; do not edit by hand (explain a survivor",
        "in the tool's `SURVIVOR_REASONS`, keyed by its id, and run it again). Each mutant",
        "is one of cosmic-ray's mutations of an exercise function's body in the reference",
        "solution; the ones below pass that exercise's check. A reason says why the mutant",
        "is equivalent (no input tells it from the reference) or harmless (it differs only",
        "where the contract leaves the answer free); \"unexplained\" is a gap in the check.",
        "The scores are in [Learner mode](learn.md#how-the-checks-are-proven).",
        "",
        *(f"- {line}" for line in head),
        "",
    ]
    for r in results:
        out += [f"## Stage {r.stage}, exercise {r.exercise}: {r.title}", ""]
        size = f"{r.ran}" if r.ran == r.total else f"a sample of {r.ran} of {r.total}"
        if r.error:
            out += [f"Not scored: {r.error}", ""]
            continue
        if not r.survivors:
            out += [f"No survivors ({size} mutants run).", ""]
            continue
        out += [f"{len(r.survivors)} of {size} mutants survived.", ""]
        for m in r.survivors:
            reason = SURVIVOR_REASONS.get(m.id, "unexplained")
            out += [f"### `{m.id}`", "", f"{reason} (line {m.line}, {m.operator})", "",
                    "```diff", m.diff.rstrip("\n"), "```", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stage", type=int, action="append",
                        help="a stage to score (repeat for more; default every stage)")
    parser.add_argument("--exercise", type=int, action="append",
                        help="only this exercise number (repeat for more)")
    parser.add_argument("--sample", type=int, default=0,
                        help="run a seeded random subset of K mutants per exercise")
    parser.add_argument("--sample-real", type=int, default=0,
                        help="K for stages whose checks start processes (default --sample)")
    parser.add_argument("--full", action="append", metavar="STAGE/EXERCISE",
                        help="run every mutant of this exercise even under --sample or "
                             "--sample-real (repeat for more), say a pure exercise of a "
                             "stage whose other checks start processes")
    parser.add_argument("--skip-real", action="store_true",
                        help="leave out stages whose checks start processes")
    parser.add_argument("--seed", default="learn-mutants", help="the sample's seed")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="worker processes running checks in parallel")
    parser.add_argument("--time-limit", type=float, default=0.0,
                        help="seconds per mutant's check (default: from the reference's time)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"the survivors file (default {DEFAULT_OUT.relative_to(ROOT)})")
    parser.add_argument("--verbose", "-v", action="store_true", help="one line per mutant")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker_main()
        return 0
    argv = list(sys.argv[1:] if argv is None else argv)

    from simplekafka.learn.catalog import STAGES

    numbers = args.stage or sorted(STAGES)
    unknown = [n for n in numbers if n not in STAGES]
    if unknown:
        parser.error(f"no stage {unknown}; stages with exercises: {sorted(STAGES)}")

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    head = preamble(args, argv)
    results: list[ExerciseResult] = []
    with tempfile.TemporaryDirectory(prefix="learn-mutation-") as scratch:
        pure = [Worker(Path(scratch) / f"worker{i}.err", MEMORY_LIMIT)
                for i in range(max(args.jobs, 1))]
        real = [Worker(Path(scratch) / f"real{i}.err", None) for i in range(max(args.jobs, 1))]
        try:
            for number in numbers:
                stage = STAGES[number]
                if stage.real_processes and args.skip_real:
                    log(f"stage {number}: skipped (--skip-real: its checks start processes)")
                    continue
                source = (SOLUTIONS / f"{stage.module}.py").read_text()
                for exercise in stage.exercises:
                    if args.exercise and exercise.number not in args.exercise:
                        continue
                    workers = real if stage.real_processes else pure
                    results.append(score_exercise(stage, exercise, source, args, workers, log))
        finally:
            for worker in pure + real:
                worker.stop()
    results.sort(key=lambda r: (r.stage, r.exercise))  # --stage's order is the run's only
    print("\n".join(f"- {line}" for line in head))
    print()
    print(table(results))
    print()
    print("score % = killed / mutants run; w/o explained % leaves out the survivors that "
          "SURVIVOR_REASONS explains as equivalent or harmless. Each row's time is the "
          "wall time of its checks (the reference's first); load is the 1-minute load average "
          "before → after.")
    unexplained = [m.id for r in results for m in r.survivors if m.id not in SURVIVOR_REASONS]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(survivors_markdown(results, head))
    print(f"\nsurvivors: {sum(len(r.survivors) for r in results)} "
          f"({len(unexplained)} unexplained), written to {args.out}")
    failed = [f"{r.stage}/{r.exercise}" for r in results if r.error]
    if failed:
        print(f"not scored (the reference fails its check): {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
