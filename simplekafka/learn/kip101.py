"""KIP-101's two scenarios, replayed step by step against a learner's replication rules.

A deliberately small model of two replicas: a log is a list of (epoch,
value), each replica keeps its (epoch, start offset) entries, a fetch copies
what the follower lacks and carries the leader's HW back. Every decision that
the rules make (HW, ISR shrink, truncation on restart) is taken by the
learner's functions; the model only moves records. The scenarios are KIP-101's:
a restart that cuts to the high watermark loses an acknowledged write, and two
hard failures in a row leave two logs that differ at the same offset.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType

from simplekafka.learn.report import Steps

LAG_MAX_MS = 10_000.0


@dataclass
class Replica:
    name: str
    log: list[tuple[int, str]] = field(default_factory=list)
    epochs: list[tuple[int, int]] = field(default_factory=list)
    hw: int = 0

    @property
    def leo(self) -> int:
        return len(self.log)

    def append(self, epoch: int, value: str) -> None:
        if not self.epochs or self.epochs[-1][0] != epoch:
            self.epochs.append((epoch, self.leo))
        self.log.append((epoch, value))

    def truncate(self, offset: int) -> None:
        del self.log[offset:]
        self.epochs = [entry for entry in self.epochs if entry[1] < offset]
        self.hw = min(self.hw, offset)


class Model:
    """Replicas 1 (A) and 2 (B); A leads epoch 0 and both are in the ISR."""

    def __init__(self, rules: ModuleType, steps: Steps):
        self.rules = rules
        self.steps = steps
        self.replicas = {1: Replica("A"), 2: Replica("B")}
        self.leader = 1
        self.epoch = 0
        self.isr = [1, 2]
        self.follower_ends: dict[int, int] = {}
        self.caught_up_ms: dict[int, float] = {1: 0.0, 2: 0.0}
        self.now = 0.0
        self.acked: dict[int, str] = {}

    def name(self, replica: int) -> str:
        return self.replicas[replica].name

    def _advance_hw(self) -> None:
        leader = self.replicas[self.leader]
        hw = self.rules.high_watermark(list(self.isr), self.leader, leader.leo,
                                       dict(self.follower_ends))
        leader.hw = max(leader.hw, hw)
        for offset in range(leader.hw):
            if offset not in self.acked and offset < leader.leo:
                self.acked[offset] = leader.log[offset][1]
                self.steps.step(f"{leader.name}'s HW is {leader.hw}: "
                                f"{leader.log[offset][1]} (offset {offset}) is acknowledged")

    def produce(self, value: str) -> None:
        leader = self.replicas[self.leader]
        leader.append(self.epoch, value)
        self.steps.step(f"{leader.name} (leader, epoch {self.epoch}) appends {value} "
                        f"at offset {leader.leo - 1}")
        self._advance_hw()

    def fetch(self, follower: int, lose_answer: bool = False) -> None:
        leader, replica = self.replicas[self.leader], self.replicas[follower]
        self.now += 1.0
        self.follower_ends[follower] = replica.leo
        if replica.leo >= leader.leo:
            self.caught_up_ms[follower] = self.now
        self._advance_hw()
        copied = leader.log[replica.leo:]
        if lose_answer:
            self.steps.step(f"{replica.name} fetches from offset {replica.leo}; "
                            f"it crashes before the answer arrives")
            return
        for epoch, value in copied:
            replica.append(epoch, value)
        replica.hw = min(leader.hw, replica.leo)
        self.steps.step(f"{replica.name} fetches: gets {[v for _, v in copied]}, "
                        f"LEO {replica.leo}, HW {replica.hw}")

    def shrink_isr(self, now: float) -> None:
        leader = self.replicas[self.leader]
        self.now = now
        dropped = self.rules.out_of_sync_replicas(
            list(self.isr), self.leader, leader.leo, dict(self.follower_ends),
            dict(self.caught_up_ms), now, LAG_MAX_MS)
        self.isr = [r for r in self.isr if r not in dropped]
        self.steps.step(f"{leader.name} checks the ISR at t={now:.0f} ms: drops "
                        f"{[self.name(r) for r in dropped]}, ISR now "
                        f"{[self.name(r) for r in self.isr]}")
        self._advance_hw()

    def crash(self, *replicas: int) -> None:
        names = " and ".join(self.name(r) for r in replicas)
        self.steps.step(f"{names} {'crash' if len(replicas) > 1 else 'crashes'}")

    def elect(self, replica: int) -> None:
        self.epoch += 1
        self.leader = replica
        self.isr = [replica]
        self.follower_ends = {}
        leader = self.replicas[replica]
        leader.epochs.append((self.epoch, leader.leo))  # where its epoch starts
        self.steps.step(f"{leader.name} becomes leader in epoch {self.epoch} with LEO "
                        f"{leader.leo}; ISR [{leader.name}]")

    def rejoin(self, follower: int) -> None:
        """A restarted replica asks the leader about its latest epoch and truncates."""
        replica, leader = self.replicas[follower], self.replicas[self.leader]
        asked = replica.epochs[-1][0] if replica.epochs else -1
        answer = self.rules.end_offset_for_epoch(list(leader.epochs), leader.leo, asked)
        cut = self.rules.truncation_offset(list(replica.epochs), replica.leo, asked,
                                           answer[0], answer[1])
        self.steps.step(f"{replica.name} restarts (LEO {replica.leo}, HW {replica.hw}), asks "
                        f"{leader.name} for the end of epoch {asked}: {tuple(answer)}; "
                        f"truncates to {cut}")
        replica.truncate(cut)

    def check_no_acknowledged_write_lost(self, summary: str) -> None:
        leader = self.replicas[self.leader]
        got = {offset: leader.log[offset][1] for offset in self.acked if offset < leader.leo}
        self.steps.expect(f"{summary}: an acknowledged write is lost", self.acked, got)

    def check_logs_agree(self, summary: str) -> None:
        leader = self.replicas[self.leader]
        for replica in self.replicas.values():
            if replica is leader:
                continue
            self.steps.expect(f"{summary}: {replica.name}'s log diverges from the leader's",
                              leader.log[: replica.leo], replica.log)


def lost_acknowledged_write(rules: ModuleType) -> None:
    """KIP-101 scenario 1: B restarts after m2 is acknowledged; then A dies."""
    steps = Steps()
    model = Model(rules, steps)
    model.produce("m1")
    model.fetch(2)
    model.fetch(2)
    model.produce("m2")
    model.fetch(2)
    model.fetch(2, lose_answer=True)  # A's HW is now 2: m2 acknowledged; B's HW still 1
    model.crash(2)
    model.rejoin(2)
    model.crash(1)
    model.elect(2)
    model.check_no_acknowledged_write_lost("KIP-101 scenario 1")
    model.rejoin(1)
    model.fetch(1)
    model.check_logs_agree("KIP-101 scenario 1")


def diverged_logs(rules: ModuleType) -> None:
    """KIP-101 scenario 2: A alone in the ISR takes m2; both die; B comes back first."""
    steps = Steps()
    model = Model(rules, steps)
    model.produce("m1")
    model.fetch(2)
    model.fetch(2)
    model.shrink_isr(now=model.now + LAG_MAX_MS / 2)  # B is at the end: it stays
    model.produce("m2")
    model.shrink_isr(now=model.now + 2 * LAG_MAX_MS)  # B is behind for too long: out
    model.crash(1, 2)
    model.elect(2)
    model.produce("m3")
    model.rejoin(1)
    model.fetch(1)
    model.check_logs_agree("KIP-101 scenario 2")
