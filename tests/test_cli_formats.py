"""The CLI's pure helpers: aligned tables, kcat's format strings, ISO times and durations."""

from __future__ import annotations

import pytest

from simplekafka.cli import CliError
from simplekafka.cli.consume_cmd import kcat_format
from simplekafka.cli.groups_cmd import parse_datetime, parse_duration
from simplekafka.cli.table import format_table
from simplekafka.consumer.fetcher import ConsumerRecord


def test_tables_align_columns_with_spaces():
    lines = format_table(["GROUP", "TOPIC", "LAG"], [("g", "orders", 12), ("billing", None, 0)])
    assert lines == ["GROUP    TOPIC   LAG",
                     "g        orders  12",
                     "billing  -       0"]
    assert all("\t" not in line and line == line.rstrip() for line in lines)
    with pytest.raises(ValueError):
        format_table(["A", "B"], [("only one",)])


def test_kcat_format_tokens_and_escapes():
    record = ConsumerRecord("t", 2, 7, 1_700_000_000_000, 0, b"k", b"value",
                            [("a", b"1"), ("b", None)])
    render = kcat_format(r"%t %p %o %k %s %T %h %S %K %R 100%% \x41\\\t|\n")
    assert render(record, None) == (b"t 2 7 k value 1700000000000 a=1,b=NULL 5 1 "
                                    b"\x00\x00\x00\x05 100% A\\\t|\n")
    empty = ConsumerRecord("t", 0, 0, -1, 0, None, None, [])
    assert kcat_format("[%k][%s][%h] %S %K %T")(empty, None) == b"[][][] -1 -1 -1"
    for bad in ("%q", "ends with %"):
        with pytest.raises(CliError):
            kcat_format(bad)


@pytest.mark.parametrize(("text", "ms"), [
    ("PT1H", 3_600_000), ("pt15m", 900_000), ("P1DT30M", 88_200_000), ("PT0.5S", 500),
    ("P2D", 172_800_000), ("PT1H2M3S", 3_723_000),
])
def test_iso_durations(text, ms):
    assert parse_duration(text) == ms


@pytest.mark.parametrize("text", ["1h", "P", "PT", "P1H", "T1H", "PT-1H", ""])
def test_bad_durations_are_cli_errors(text):
    with pytest.raises(CliError):
        parse_duration(text)


def test_iso_datetimes():
    assert parse_datetime("2001-09-09T01:46:40.000Z") == 1_000_000_000_000
    assert parse_datetime("2001-09-09T03:46:40+02:00") == 1_000_000_000_000
    assert parse_datetime("2001-09-09T01:46:40.250+00:00") == 1_000_000_000_250
    with pytest.raises(CliError):
        parse_datetime("yesterday")
