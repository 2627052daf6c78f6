"""The web console in a real headless Chromium (Debian's), driven by Playwright.

The page lists the brokers and topics; after the leader of a partition is
SIGKILLed, the page shows the new leader and the smaller ISR within seconds
without a reload. Screenshots are saved under ``test-artifacts/`` (gitignored).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from simplekafka.admin import Admin
from simplekafka.cluster import LocalCluster
from simplekafka.console.process import ConsoleProcess

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


def partition_row(page, topic: str, partition: int):
    return page.locator(f'tr[data-topic="{topic}"][data-partition="{partition}"]')


def test_page_follows_a_leader_kill_without_reload(tmp_path):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with LocalCluster(brokers=3, base_dir=tmp_path / "cluster") as cluster:
        with Admin(cluster.bootstrap_servers) as admin:
            admin.create_topic("watched", num_partitions=2, replication_factor=3)
        cluster.wait_for_isr("watched", 0, [1, 2, 3])
        with ConsoleProcess(cluster.bootstrap_servers) as console, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                        headless=True)
            try:
                page = browser.new_page(viewport={"width": 1200, "height": 900})
                page.goto(console.url)
                # Brokers, with the controller marked, and the topic's partitions.
                page.wait_for_selector("#brokers tr[data-broker-id]", timeout=30_000)
                assert page.locator("#brokers tr[data-broker-id]").count() == 3
                controller = cluster.controller_id()
                role = page.locator(f'#brokers tr[data-broker-id="{controller}"] td.role')
                assert role.inner_text() == "controller"
                row = partition_row(page, "watched", 0)
                row.wait_for(timeout=30_000)
                leader = cluster.leader_of("watched", 0)
                assert row.locator("td.leader").inner_text() == str(leader)
                assert sorted(row.locator("td.isr").inner_text().split(",")) == ["1", "2", "3"]
                # The record browser pages through what the REST API produced.
                produced = page.evaluate("""async () => (await fetch(
                    '/api/topics/watched/records', {method: 'POST', body: JSON.stringify(
                    {records: [{key: 'k1', value: 'first', partition: 0},
                               {key: 'k2', value: 'second', partition: 0}]})})).status""")
                assert produced == 200
                page.select_option("#browse-topic", "watched")
                page.click("#browse button[type=submit]")
                page.wait_for_selector("#records tbody tr", timeout=10_000)
                cells = page.locator("#records tbody tr").all_inner_texts()
                assert "first" in cells[0] and "second" in cells[1]
                page.screenshot(path=str(ARTIFACTS / "console-before-kill.png"), full_page=True)
                page.evaluate("window.__sameDocument = 'yes'")

                cluster.kill(leader)
                new_leader = cluster.wait_for_leader("watched", 0, timeout=60, not_=leader)
                cluster.wait_for(lambda: leader not in cluster.isr_of("watched", 0),
                                 "the dead leader leaves the ISR", timeout=60)
                seen_at = time.monotonic()
                # The page catches up on its own (polling), within a few seconds.
                page.wait_for_function(
                    """([leader, dead]) => {
                        const row = document.querySelector(
                            'tr[data-topic="watched"][data-partition="0"]');
                        if (!row) return false;
                        const isr = row.querySelector('td.isr').textContent.split(',');
                        return row.querySelector('td.leader').textContent === String(leader)
                            && isr.length === 2 && !isr.includes(String(dead));
                    }""", arg=[new_leader, leader], timeout=8_000)
                lag = time.monotonic() - seen_at
                assert page.evaluate("window.__sameDocument") == "yes"  # no reload happened
                assert "under-replicated" in (row.get_attribute("class") or "")
                page.wait_for_function(
                    "document.querySelectorAll('#brokers tr[data-broker-id]').length === 2",
                    timeout=5_000)
                page.screenshot(path=str(ARTIFACTS / "console-after-kill.png"), full_page=True)
                print(f"page showed the new leader {lag:.2f} s after ZooKeeper did")
                # Swagger UI renders the API from the console's own files (no internet).
                docs = browser.new_page()
                outside = []
                docs.on("request", lambda r: r.url.startswith(console.url)
                        or outside.append(r.url))
                docs.goto(console.url + "api/docs")
                docs.wait_for_selector(".opblock", timeout=30_000)
                assert docs.locator(".opblock").count() >= 14
                assert outside == []
                docs.screenshot(path=str(ARTIFACTS / "console-api-docs.png"))
            finally:
                browser.close()
