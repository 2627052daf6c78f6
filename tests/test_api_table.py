"""The broker API page's versions table says what the broker advertises and sends.

``docs/api/broker.md`` lists each API with its version range; this test reads
the table and holds every range against ``SUPPORTED_VERSIONS`` (and the
controller's sent versions), so a version raised in code without the page
fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

from simplekafka.broker.controller import requests as controller_requests
from simplekafka.protocol.api import SUPPORTED_VERSIONS, ApiKey

PAGE = Path(__file__).resolve().parents[1] / "docs" / "api" / "broker.md"
SENT = {ApiKey.LEADER_AND_ISR: controller_requests.LEADER_AND_ISR_VERSION,
        ApiKey.UPDATE_METADATA: controller_requests.UPDATE_METADATA_VERSION,
        ApiKey.STOP_REPLICA: controller_requests.STOP_REPLICA_VERSION}


def api_key(name: str) -> ApiKey:
    return ApiKey[re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()]


def version_rows() -> list[tuple[list[str], list[tuple[int, int]], bool]]:
    """(API names, their ranges, sent?) for each row of the versions table."""
    rows = []
    in_table = False
    for line in PAGE.read_text().splitlines():
        if line.startswith("| API | versions"):
            in_table = True
            continue
        if in_table and not line.startswith("|"):
            break
        if not in_table or line.startswith("|---"):
            continue
        names_cell, versions_cell = [c.strip() for c in line.strip("|").split("|")[:2]]
        names = [n.strip() for n in names_cell.split(",")]
        head = versions_cell.split("(")[0]
        ranges = [(int(low), int(high or low))
                  for low, high in re.findall(r"(\d+)(?:-(\d+))?", head)]
        rows.append((names, ranges, "(sent" in versions_cell))
    return rows


def test_every_row_names_the_versions_the_code_has():
    rows = version_rows()
    assert len(rows) > 15, "the versions table was not found"
    wrong = []
    for names, ranges, sent in rows:
        assert len(names) == len(ranges), (names, ranges)
        for name, (low, high) in zip(names, ranges, strict=True):
            key = api_key(name)
            have = (SENT[key], SENT[key]) if sent else SUPPORTED_VERSIONS[key]
            if (low, high) != have:
                wrong.append(f"{name}: the page says {low}-{high}, the code {have[0]}-{have[1]}")
    assert not wrong, "\n".join(wrong)


def test_every_advertised_api_has_a_row():
    named = {api_key(n) for names, _, _ in version_rows() for n in names}
    assert set(SUPPORTED_VERSIONS) - named == set()
