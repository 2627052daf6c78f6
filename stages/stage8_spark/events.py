"""Realistic JSON events for the stage 8 pipelines, written with our Producer.

Event time is what the pipelines aggregate on, so the generator never reads the
clock: every event's time is ``start`` plus an offset the caller chooses, and a
seeded ``random.Random`` picks the rest. The same seed gives the same events,
which makes the tests' expected aggregates exact. *Late* events are ordinary
events whose time lies behind what the stream has already shown; they become
late only by being produced after newer ones (see ``late``).

Every event is a JSON object with an ``event_time`` in ISO-8601 UTC with
milliseconds (``2026-01-05T09:00:03.250Z``), the form Spark's ``from_json``
reads as a timestamp; the Kafka record's own timestamp is set to the same
instant and its key to the event's user or sensor, so one user's events stay in
one partition, in order.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone

#: Where event time starts unless the caller says otherwise (a fixed instant: no clock).
START = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)

PAGE_VIEWS = "page-views"
SENSOR_READINGS = "sensor-readings"
USER_CLICKS = "user-clicks"
TRANSACTIONS = "transactions"
FRAUD_ALERTS = "fraud-alerts"
TOPICS = (PAGE_VIEWS, SENSOR_READINGS, USER_CLICKS, TRANSACTIONS, FRAUD_ALERTS)

#: Payments strictly above this amount are flagged as possible fraud.
FRAUD_THRESHOLD = 10_000

_PAGES = ("/", "/search", "/cart", "/checkout", "/account", "/help")
_ELEMENTS = ("nav-home", "search-box", "product-card", "add-to-cart", "checkout-button")
_CURRENCIES = ("EUR", "USD", "GBP")
_MERCHANTS = ("bookshop", "grocer", "airline", "electronics", "jeweller", "cafe")


def iso_millis(moment: datetime) -> str:
    """``2026-01-05T09:00:03.250Z``: ISO-8601 in UTC with milliseconds."""
    utc = moment.astimezone(timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def parse_event_time(text: str) -> datetime:
    """The inverse of ``iso_millis``."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def epoch_millis(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


@dataclass(frozen=True)
class Event:
    """One event: the topic it goes to, its record key, its event time and its fields."""

    topic: str
    key: str
    time: datetime
    fields: tuple[tuple[str, object], ...]

    def as_dict(self) -> dict:
        return {**dict(self.fields), "event_time": iso_millis(self.time)}

    def value(self) -> bytes:
        """The record value: the JSON object, keys in a fixed order."""
        return json.dumps(self.as_dict(), separators=(",", ":")).encode()


class EventGenerator:
    """Page views, sensor readings, clicks and payments at chosen event times.

    Times are given in seconds after ``start``; each method returns events in
    event-time order (a live stream is roughly ordered; lateness is added by
    the caller, on purpose).
    """

    def __init__(self, seed: int = 8, start: datetime = START) -> None:
        self.random = random.Random(seed)
        self.start = start
        self._next_transaction = 1

    def at(self, seconds: float) -> datetime:
        """``start`` plus ``seconds``, rounded to the millisecond (what JSON carries)."""
        return self.start + timedelta(milliseconds=round(seconds * 1000))

    def event(self, topic: str, key: str, seconds: float, **fields: object) -> Event:
        return Event(topic, key, self.at(seconds), tuple(fields.items()))

    def page_views(self, first_minute: int, minutes: int, per_minute: tuple[int, int] = (4, 9),
                   users: int = 12, products: int = 30) -> list[Event]:
        """Visits to a shop; about half are ``/product/<n>`` pages."""
        rnd = self.random
        events = []
        for minute in range(first_minute, first_minute + minutes):
            for _ in range(rnd.randint(*per_minute)):
                if rnd.random() < 0.5:
                    url = f"/product/{rnd.randint(1, products)}"
                else:
                    url = rnd.choice(_PAGES)
                user = f"user-{rnd.randint(1, users):02d}"
                seconds = minute * 60 + rnd.uniform(0, 59.999)
                events.append(self.event(PAGE_VIEWS, user, seconds, user=user, url=url,
                                          referrer=rnd.choice(("search", "ad", "direct"))))
        return sorted(events, key=lambda e: e.time)

    def sensor_readings(self, first_minute: int, minutes: int, sensors: int = 3,
                        every_seconds: int = 20) -> list[Event]:
        """Thermometers that each report every ``every_seconds``, drifting slowly."""
        rnd = self.random
        events = []
        for number in range(1, sensors + 1):
            sensor = f"sensor-{number}"
            temperature = rnd.uniform(18.0, 24.0)
            for seconds in range(first_minute * 60, (first_minute + minutes) * 60, every_seconds):
                temperature += rnd.uniform(-0.4, 0.4)
                events.append(self.event(SENSOR_READINGS, sensor, seconds + rnd.uniform(0, 2),
                                          sensor=sensor, temperature=round(temperature, 2),
                                          unit="C"))
        return sorted(events, key=lambda e: e.time)

    def clicks(self, user: str, start_seconds: float, count: int,
               pause: tuple[float, float] = (5, 90)) -> list[Event]:
        """One burst of ``count`` clicks by ``user``, each ``pause`` seconds after the last.

        Bursts whose clicks are less than the session gap apart make one
        session; put more than the gap between two bursts to start another.
        """
        rnd = self.random
        events, seconds = [], start_seconds
        for _ in range(count):
            events.append(self.event(USER_CLICKS, user, seconds, user=user,
                                      element=rnd.choice(_ELEMENTS),
                                      url=f"/product/{rnd.randint(1, 30)}"))
            seconds += rnd.uniform(*pause)
        return events

    def transactions(self, first_minute: int, minutes: int, per_minute: int = 5,
                     fraud_every: int = 7, users: int = 10) -> list[Event]:
        """Card payments of a few to a few hundred units; every ``fraud_every``-th is large.

        The large ones lie between 10,000.01 and 50,000, strictly above
        ``FRAUD_THRESHOLD``; ordinary ones stay below 1,000.
        """
        rnd = self.random
        events = []
        for minute in range(first_minute, first_minute + minutes):
            for _ in range(per_minute):
                number = self._next_transaction
                self._next_transaction += 1
                if number % fraud_every == 0:
                    amount = round(rnd.uniform(FRAUD_THRESHOLD + 0.01, 50_000), 2)
                else:
                    amount = round(rnd.lognormvariate(3.5, 1.0) % 999 + 1, 2)
                user = f"user-{rnd.randint(1, users):02d}"
                events.append(self.event(
                    TRANSACTIONS, user, minute * 60 + rnd.uniform(0, 59.999),
                    transaction_id=f"tx-{number:06d}", user=user, amount=amount,
                    currency=rnd.choice(_CURRENCIES), merchant=rnd.choice(_MERCHANTS)))
        return sorted(events, key=lambda e: e.time)


def late(events: Iterable[Event], behind: timedelta) -> list[Event]:
    """The same events with their event time moved ``behind`` into the past.

    Produced after newer events, they arrive late: a pipeline whose watermark
    has already passed their windows drops them.
    """
    return [replace(event, time=event.time - behind) for event in events]


def produce(bootstrap_servers: str, events: Sequence[Event], timeout: float = 60.0) -> int:
    """Write ``events`` in order with our Producer (acks=all); returns how many were acknowledged.

    Each record's timestamp is its event time and its key the event's key;
    raises the first delivery error.
    """
    from simplekafka.producer import Producer

    with Producer(bootstrap_servers, acks="all", linger_ms=5,
                  client_id="stage8-event-generator") as producer:
        futures = [producer.send(event.topic, value=event.value(), key=event.key.encode(),
                                 timestamp=epoch_millis(event.time)) for event in events]
        producer.flush(timeout)
    for future in futures:
        future.result(0)
    return len(futures)


def create_topics(bootstrap_servers: str, topics: Iterable[str] = TOPICS, partitions: int = 2,
                  replication_factor: int = 1) -> list[str]:
    """Create the topics that do not exist yet; returns the ones it created."""
    from simplekafka.admin import Admin

    with Admin(bootstrap_servers) as admin:
        existing = set(admin.list_topics())
        missing = [topic for topic in topics if topic not in existing]
        for topic in missing:
            admin.create_topic(topic, partitions, replication_factor)
    return missing
