"""The web console in a real headless Chromium (Debian's), driven by Playwright.

One three-broker cluster (with the ACL authorizer, everyone allowed where no
ACL names a resource) and one browser page serve the whole module; each test
does one thing a user does on the console, checks it with a real client
(confluent-kafka) where the cluster's state is the proof, and saves a
screenshot under ``test-artifacts/`` (gitignored). The last test SIGKILLs a
partition leader: the page follows the new leader and shows the down banner
without a reload.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import pytest

from simplekafka.admin import Admin
from simplekafka.cluster import LocalCluster
from simplekafka.console.process import ConsoleProcess
from simplekafka.coordination.processes import wait_until

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
CONFIG = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
          "allow.everyone.if.no.acl.found": "true",
          "offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "3",
          "group.initial.rebalance.delay.ms": "0",
          "auto.leader.rebalance.enable": "false", "zookeeper.session.timeout.ms": "6000"}
WAIT_MS = 45_000  # a loaded suite run (two cores, three workers) is slow, not wrong


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    cluster = LocalCluster(brokers=3, base_dir=tmp_path_factory.mktemp("console-browser"),
                           broker_config=CONFIG)
    cluster.start()
    try:
        with Admin(cluster.bootstrap_servers) as admin:
            admin.create_topic("orders", num_partitions=3, replication_factor=3)
            admin.create_topic("watched", num_partitions=2, replication_factor=3)
        cluster.wait_for_isr("watched", 0, [1, 2, 3])
        _commit_once(cluster.bootstrap_servers)  # so __consumer_offsets exists
        with ConsoleProcess(cluster.bootstrap_servers) as console:
            yield cluster, console
    finally:
        cluster.stop()


def _commit_once(bootstrap: str) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "warm-up"})
    try:
        consumer.commit(offsets=[TopicPartition("orders", 0, 0)], asynchronous=False)
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def browser(live):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                     headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def page(live, browser):
    _, console = live
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    page.goto(console.url)
    page.wait_for_selector("#brokers tr[data-broker-id]")
    yield page
    context.close()


def go(page, hash_path: str) -> None:
    """Show a view of the one-page console (a hash change: no reload), no message left over."""
    page.evaluate("path => { document.querySelector('#flash').hidden = true; "
                  "location.hash = path; }", hash_path)
    page.wait_for_function("path => location.hash === path", arg=hash_path)


def shot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"console-{name}.png"), full_page=True)


def produce(bootstrap: str, topic: str, records: list[tuple], partition: int | None = None):
    """Records through confluent-kafka: (key, value) or (key, value, timestamp_ms)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for record in records:
        kwargs = {"key": record[0], "value": record[1]}
        if len(record) > 2:
            kwargs["timestamp"] = record[2]
        if partition is not None:
            kwargs["partition"] = partition
        producer.produce(topic, **kwargs)
    assert producer.flush(30) == 0


def admin_client(bootstrap: str):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap})


def config_value(bootstrap: str, kind: str, name: str, key: str) -> str | None:
    from confluent_kafka.admin import ConfigResource

    resource = ConfigResource(kind, name)
    admin = admin_client(bootstrap)  # kept alive until the future is done
    described = admin.describe_configs([resource])[resource].result(30)
    entry = described.get(key)
    return None if entry is None else entry.value


def config_shows(page, name: str, value: str) -> None:
    """Wait until the config table shows ``value`` for ``name``; a failed call fails at once."""
    page.wait_for_function("""([name, value]) => {
        const flash = document.querySelector('#flash.error');
        if (flash && !flash.hidden) return true;
        const row = document.querySelector(`#configs tr[data-config="${name}"]`);
        return row && row.querySelector('td.value').textContent === value; }""",
                           arg=[name, value])
    error = page.locator("#flash.error")
    assert not error.is_visible(), error.inner_text()


def test_overview_shows_brokers_controller_and_topics(live, page):
    cluster, _ = live
    go(page, "#/")
    rows = page.locator("#brokers tr[data-broker-id]")
    rows.nth(2).wait_for()
    assert rows.count() == 3
    controller = cluster.controller_id()
    role = page.locator(f'#brokers tr[data-broker-id="{controller}"] td.role')
    assert role.inner_text() == "controller"
    assert page.locator('#brokers tr[data-reachable="false"]').count() == 0
    page.locator('a[data-topic-link="orders"]').wait_for()
    # Internal topics are hidden until asked for.
    assert page.locator('a[data-topic-link="__consumer_offsets"]').count() == 0
    shot(page, "overview")


def test_create_topic_then_its_page(live, page):
    cluster, _ = live
    go(page, "#/")
    page.fill("#create-topic-name", "made-in-console")
    page.fill("#create-topic-partitions", "2")
    page.fill("#create-topic-replication", "3")
    page.fill("#create-topic-configs", "retention.ms=3600000")
    page.click("#create-topic button[type=submit]")
    page.wait_for_function("location.hash === '#/topic/made-in-console'")
    page.locator("#topic-partitions tr[data-partition='1']").wait_for()
    with Admin(cluster.bootstrap_servers) as admin:
        described = admin.describe_topics(["made-in-console"])["made-in-console"]
    assert len(described.partitions) == 2
    assert all(len(p.replicas) == 3 for p in described.partitions)
    assert config_value(cluster.bootstrap_servers, "topic", "made-in-console",
                        "retention.ms") == "3600000"


def test_topic_page_shows_offsets_size_leader_and_isr(live, page):
    cluster, _ = live
    produce(cluster.bootstrap_servers, "orders", [(b"k", b"v%d" % i) for i in range(5)],
            partition=1)
    go(page, "#/topic/orders")
    row = page.locator("#topic-partitions tr[data-partition='1']")
    page.wait_for_function("""() => {
        const row = document.querySelector("#topic-partitions tr[data-partition='1']");
        // the size comes from the leader's metrics, up to a scrape behind the offsets
        return row && row.querySelector('td.log-end').textContent === '5'
            && Number(row.querySelector('td.size').dataset.bytes) > 0; }""")
    assert row.locator("td.log-start").inner_text() == "0"
    assert row.locator("td.leader").inner_text() == str(cluster.leader_of("orders", 1))
    assert sorted(row.locator("td.isr").inner_text().split(",")) == ["1", "2", "3"]
    shot(page, "topic")


def test_topic_config_edit(live, page):
    cluster, _ = live
    go(page, "#/topic/orders")
    page.fill("#configs-filter", "retention.ms")
    row = page.locator('#configs tr[data-config="retention.ms"]')
    row.locator("button.edit").click()
    row.locator("input.config-value").fill("7200000")
    row.locator("button.save").click()
    config_shows(page, "retention.ms", "7200000")
    assert config_value(cluster.bootstrap_servers, "topic", "orders",
                        "retention.ms") == "7200000"
    shot(page, "topic-configs")
    # Reset removes the dynamic value: the default comes back.
    page.locator('#configs tr[data-config="retention.ms"] button.delete').click()
    page.wait_for_function("""() => {
        const row = document.querySelector('#configs tr[data-config="retention.ms"]');
        return row && row.querySelector('td.value').textContent !== '7200000'; }""")
    assert config_value(cluster.bootstrap_servers, "topic", "orders",
                        "retention.ms") != "7200000"


def produce_in_page(page, key: str, value: str, headers: str, partition: str) -> int:
    """Fill the topic page's produce form and send; the offset the page reports."""
    page.fill("#produce-key", key)
    page.fill("#produce-value", value)
    page.fill("#produce-headers", headers)
    page.select_option("#produce-partition", partition)
    page.evaluate("""() => {
        document.querySelector('#produce-result').removeAttribute('data-offset');
        document.querySelector('#flash').hidden = true; }""")
    page.click("#produce-send")
    page.wait_for_selector("#produce-result[data-offset], #flash.error")
    error = page.locator("#flash.error")
    assert not error.is_visible(), error.inner_text()
    result = page.locator("#produce-result")
    assert result.get_attribute("data-partition") == partition
    return int(result.get_attribute("data-offset"))


def read_one(bootstrap: str, topic: str, partition: int, offset: int):
    """The record at one offset, read by confluent-kafka."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe",
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None:
                assert message.error() is None, message.error()
                return message
        pytest.fail(f"no record at {topic}-{partition}@{offset}")
    finally:
        consumer.close()


def test_produce_a_record_with_key_and_value(live, page):
    cluster, _ = live
    go(page, "#/topic/orders")
    offset = produce_in_page(page, "customer-7", '{"item": "book", "qty": 2}', "", "2")
    shot(page, "produce")
    message = read_one(cluster.bootstrap_servers, "orders", 2, offset)
    assert message.key() == b"customer-7"
    assert json.loads(message.value()) == {"item": "book", "qty": 2}


def test_produce_a_record_with_headers(live, page):
    cluster, _ = live
    go(page, "#/topic/orders")
    offset = produce_in_page(page, "customer-8", "with headers", "source=console\ntrace=abc",
                             "2")
    message = read_one(cluster.bootstrap_servers, "orders", 2, offset)
    assert message.value() == b"with headers"
    assert message.headers() == [("source", b"console"), ("trace", b"abc")]


def test_record_browser_all_partitions_filters_and_json(live, page):
    cluster, _ = live
    now = int(time.time() * 1000)
    old = now - 3_600_000
    produce(cluster.bootstrap_servers, "orders",
            [(b"a", json.dumps({"colour": "red", "n": 1}).encode(), old)], partition=0)
    produce(cluster.bootstrap_servers, "orders",
            [(b"b", json.dumps({"colour": "blue", "n": 2}).encode(), now)], partition=1)
    produce(cluster.bootstrap_servers, "orders", [(b"c", b"plain text", now)], partition=2)
    page.reload()  # opens on the record browser as a new visit would
    go(page, "#/records")
    # The first topic that is not internal, with internal topics hidden.
    page.wait_for_function("document.querySelector('#browse-topic').value === 'made-in-console'")
    assert not page.is_checked("#browse-show-internal")
    options = page.locator("#browse-topic option").all_inner_texts()
    assert "__consumer_offsets" not in options
    page.check("#browse-show-internal")
    page.wait_for_function(
        "[...document.querySelectorAll('#browse-topic option')]"
        ".some(o => o.value === '__consumer_offsets')")
    page.uncheck("#browse-show-internal")
    page.select_option("#browse-topic", "orders")
    page.select_option("#browse-partition", "all")
    page.click("#browse button[type=submit]")
    page.wait_for_function("""() => {
        const parts = new Set([...document.querySelectorAll('#records tbody tr')]
            .map(r => r.dataset.partition));
        return parts.has('0') && parts.has('1') && parts.has('2'); }""")
    # Text search across partitions.
    page.fill("#browse-contains", "blue")
    page.click("#browse button[type=submit]")
    page.wait_for_function("""() => {
        const rows = document.querySelectorAll('#records tbody tr');
        return rows.length === 1 && rows[0].dataset.partition === '1'; }""")
    pretty = page.locator("#records tbody tr td.value pre.json").inner_text()
    assert json.loads(pretty) == {"colour": "blue", "n": 2} and "\n" in pretty
    shot(page, "records-search")
    # A time range: the hour-old record only.
    page.fill("#browse-contains", "colour")
    page.evaluate("""([from, to]) => {
        const local = ms => { const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60000);
                              return d.toISOString().slice(0, 19); };
        document.querySelector('#browse-since').value = local(from);
        document.querySelector('#browse-until').value = local(to); }""",
                  [old - 60_000, old + 60_000])
    page.click("#browse button[type=submit]")
    page.wait_for_function("""() => {
        const rows = document.querySelectorAll('#records tbody tr');
        return rows.length === 1 && rows[0].dataset.partition === '0'; }""")
    assert "red" in page.locator("#records tbody tr td.value").inner_text()
    shot(page, "records-time-range")


def test_an_earlier_read_answered_late_does_not_replace_the_later_one(live, page):
    """Two reads in flight: the answer to the first, held back until the second is shown,
    must not overwrite it (the loaded-machine race the record browser test once lost)."""
    cluster, _ = live
    produce(cluster.bootstrap_servers, "orders", [(b"late", b"needle-late")], partition=0)
    go(page, "#/")
    go(page, "#/records")  # a fresh form: no filters left from an earlier test
    page.select_option("#browse-topic", "orders")
    page.wait_for_function("document.querySelector('#browse-note').textContent.includes('records')")
    held: list = []

    def hold_the_unfiltered_read(route):
        if "contains=" in route.request.url:
            route.continue_()
        else:
            held.append(route)

    page.route("**/api/topics/orders/records?*", hold_the_unfiltered_read)
    try:
        page.fill("#browse-contains", "")
        page.click("#browse button[type=submit]")  # the first read: held
        page.wait_for_function("document.querySelector('#browse-note').textContent === 'reading…'")
        page.fill("#browse-contains", "needle-late")
        page.click("#browse button[type=submit]")  # the second read: answered at once
        page.wait_for_function("""() => {
            const rows = document.querySelectorAll('#records tbody tr');
            return rows.length === 1 && rows[0].innerText.includes('needle-late'); }""")
        deadline = time.monotonic() + 10
        while not held and time.monotonic() < deadline:
            page.wait_for_timeout(50)
        assert held, "the first read never reached the route"
        with page.expect_response(lambda r: "/records?" in r.url and "contains=" not in r.url):
            held[0].continue_()  # now the first read's answer arrives, late
        page.wait_for_timeout(500)  # time for the page to show it, were it going to
    finally:
        page.unroute("**/api/topics/orders/records?*")
        page.fill("#browse-contains", "")
    rows = page.locator("#records tbody tr")
    assert rows.count() == 1 and "needle-late" in rows.first.inner_text()


def test_group_page_members_and_offset_reset_plan_then_apply(live, page):
    from confluent_kafka import Consumer, TopicPartition

    cluster, _ = live
    produce(cluster.bootstrap_servers, "watched", [(b"k", b"x%d" % i) for i in range(4)],
            partition=0)
    settings = {"bootstrap.servers": cluster.bootstrap_servers, "group.id": "billing",
                "client.id": "billing-app", "enable.auto.commit": False,
                "auto.offset.reset": "earliest"}
    consumer = Consumer(settings)
    consumer.subscribe(["watched"])
    seen = 0
    deadline = time.monotonic() + 60
    while seen < 4 and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is not None and message.error() is None:
            seen += 1
    assert seen == 4
    consumer.commit(asynchronous=False)
    try:
        go(page, "#/group/billing")
        member = page.locator("#group-members tr[data-member]")
        member.wait_for()
        assert member.locator("td.client-id").inner_text() == "billing-app"
        assert "watched-0" in member.locator("td.assignment").inner_text()
        shot(page, "group-members")
    finally:
        consumer.close()

    def committed() -> dict[int, int]:
        probe = Consumer({**settings, "client.id": "probe"})
        try:
            found = probe.committed([TopicPartition("watched", p) for p in (0, 1)], timeout=30)
            return {tp.partition: tp.offset for tp in found}
        finally:
            probe.close()

    before = committed()
    assert before[0] == 4
    page.wait_for_function("document.querySelector('#group-state').dataset.state === 'Empty'",
                           timeout=30_000)
    page.select_option("#reset-topic", "watched")
    page.select_option("#reset-to", "earliest")
    page.click("#reset-preview")
    plan_row = page.locator('#reset-plan tr[data-topic="watched"][data-partition="0"]')
    plan_row.wait_for()
    assert plan_row.locator("td.current").inner_text() == "4"
    assert plan_row.locator("td.new").inner_text() == "0"
    assert page.locator("#reset-note").get_attribute("data-executed") == "false"
    shot(page, "group-reset-plan")
    assert committed() == before  # the plan changes nothing
    page.click("#reset-apply")
    page.wait_for_function("document.querySelector('#reset-note').dataset.executed === 'true'")
    assert committed()[0] == 0
    page.locator('#group-offsets tr[data-topic="watched"][data-partition="0"] td.committed'
                 ).filter(has_text="0").wait_for()
    shot(page, "group-reset-applied")


def test_names_from_the_cluster_are_text_not_html(live, page):
    from confluent_kafka import Consumer, TopicPartition

    cluster, _ = live
    hostile = '<img src=x onerror="window.__owned=1"><b>bold</b>'
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": hostile})
    try:
        consumer.commit(offsets=[TopicPartition("orders", 0, 0)], asynchronous=False)
    finally:
        consumer.close()
    go(page, "#/groups")
    row = page.locator("#groups tr[data-group]").filter(has_text="bold")
    row.wait_for()
    assert row.locator("a").inner_text() == hostile
    assert row.locator("img, b").count() == 0
    row.locator("a").click()
    page.locator("#group-name").filter(has_text="<b>bold</b>").wait_for()
    assert page.locator("#view img, #view b").count() == 0
    assert page.evaluate("window.__owned") is None


def test_the_page_builds_html_from_text_only_and_from_its_own_files():
    """No innerHTML-like call anywhere, and no address outside the console itself."""
    static = Path(__file__).resolve().parent.parent / "simplekafka/console/static"
    for name in ("console.js", "index.html", "console.css"):
        text = (static / name).read_text()
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write"):
            assert sink not in text, (name, sink)
        addresses = re.findall(r"https?://[^\s\"')]+", text)
        assert addresses in ([], ["http://www.w3.org/2000/svg"]), (name, addresses)


def test_broker_configs_view_and_edit(live, page):
    cluster, _ = live
    go(page, "#/brokers")
    page.locator("#brokers tr[data-broker-id='2']").wait_for()
    page.click("#brokers tr[data-broker-id='2'] a")
    page.wait_for_function("location.hash === '#/broker/2'")
    page.locator("#configs tr[data-config]").first.wait_for()
    page.fill("#config-add-name", "log.cleaner.threads")
    page.fill("#config-add-value", "2")
    page.click("#config-add button[type=submit]")
    config_shows(page, "log.cleaner.threads", "2")
    # Each broker learns a dynamic config from ZooKeeper's change notification, as Kafka's
    # brokers do: what broker 2 itself describes follows the write, a moment later.
    wait_until(lambda: config_value(cluster.bootstrap_servers, "broker", "2",
                                    "log.cleaner.threads") == "2",
               "broker 2 to describe log.cleaner.threads=2", timeout=30)
    shot(page, "broker-configs")
    go(page, "#/broker/default")
    page.locator("#broker-title").filter(has_text="defaults").wait_for()
    page.fill("#config-add-name", "log.retention.ms")
    page.fill("#config-add-value", "86400000")
    page.click("#config-add button[type=submit]")
    config_shows(page, "log.retention.ms", "86400000")
    # A broker without its own value takes the cluster-wide default.
    wait_until(lambda: config_value(cluster.bootstrap_servers, "broker", "3",
                                    "log.retention.ms") == "86400000",
               "broker 3 to describe the cluster-wide log.retention.ms", timeout=30)


def test_acls_list_create_delete(live, page):
    from confluent_kafka.admin import AclBindingFilter

    cluster, _ = live

    def acls_for_alice() -> list:
        wanted = AclBindingFilter("ANY", None, "ANY", "User:alice", None, "ANY", "ANY")
        admin = admin_client(cluster.bootstrap_servers)
        return admin.describe_acls(wanted).result(30)

    go(page, "#/acls")
    page.select_option("#acl-resource-type", "TOPIC")
    page.fill("#acl-resource-name", "orders")
    page.select_option("#acl-pattern-type", "LITERAL")
    page.fill("#acl-principal", "User:alice")
    page.select_option("#acl-operation", "READ")
    page.select_option("#acl-permission", "ALLOW")
    page.click("#acl-form button[type=submit]")
    row = page.locator("#acls tbody tr").filter(has_text="User:alice")
    row.wait_for()
    found = acls_for_alice()
    assert len(found) == 1 and found[0].name == "orders"
    shot(page, "acls")
    row.locator("button.delete").click()
    page.click("#confirm-ok")
    row.wait_for(state="detached")
    assert acls_for_alice() == []


def test_scram_users_list_add_delete(live, page):
    from confluent_kafka import KafkaException

    cluster, _ = live

    def mechanisms(user: str) -> list[str]:
        # Named, not all users: our broker answers an empty list of users with none.
        admin = admin_client(cluster.bootstrap_servers)
        try:
            described = admin.describe_user_scram_credentials([user])[user].result(30)
        except KafkaException:  # RESOURCE_NOT_FOUND: no credentials
            return []
        return [str(info.mechanism) for info in described.scram_credential_infos]

    go(page, "#/users")
    page.fill("#user-name", "carol")
    page.fill("#user-password", "s3cret-pass")
    page.select_option("#user-mechanism", "SCRAM-SHA-512")
    page.click("#user-form button[type=submit]")
    row = page.locator('#users tr[data-user="carol"]')
    row.wait_for()
    assert "SCRAM-SHA-512" in row.locator("td.mechanisms").inner_text()
    assert any("SHA_512" in m for m in mechanisms("carol"))
    shot(page, "users")
    row.locator("button.delete").click()
    page.click("#confirm-ok")
    row.wait_for(state="detached")
    assert mechanisms("carol") == []


def test_live_charts_of_messages_in_and_out(live, page):
    from confluent_kafka import Consumer

    cluster, _ = live
    go(page, "#/charts")
    produce(cluster.bootstrap_servers, "orders", [(b"c", b"m%d" % i) for i in range(200)])
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "charts",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["orders"])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            consumer.poll(0.5)
            if page.evaluate("""() => {
                const box = document.querySelector('[data-chart-topic="orders"]');
                if (!box) return false;
                const high = cls => Math.min(...box.querySelector('polyline.' + cls)
                    .getAttribute('points').split(' ').filter(Boolean)
                    .map(p => Number(p.split(',')[1])));
                const base = Number(box.querySelector('line.grid').getAttribute('y1'));
                return high('in') < base && high('out') < base; }"""):
                break
        else:
            pytest.fail("the chart of orders did not rise for both in and out")
    finally:
        consumer.close()
    assert page.locator('[data-chart-topic="__consumer_offsets"]').count() == 0
    shot(page, "charts")


def test_dark_theme_follows_the_system_and_the_toggle_is_remembered(live, browser):
    _, console = live
    context = browser.new_context(color_scheme="dark", viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.goto(console.url)
        page.wait_for_selector("#brokers tr[data-broker-id]", timeout=WAIT_MS)

        def background() -> str:
            return page.evaluate("getComputedStyle(document.body).backgroundColor")

        dark = background()
        assert page.get_attribute("#theme-toggle", "data-theme") == "dark"
        shot(page, "dark")
        page.click("#theme-toggle")
        assert background() != dark
        page.reload()
        page.wait_for_selector("#brokers tr[data-broker-id]", timeout=WAIT_MS)
        assert page.evaluate("document.documentElement.dataset.theme") == "light"
        assert background() != dark
        page.click("#theme-toggle")
        assert background() == dark
    finally:
        context.close()


def test_delete_topic_asks_first(live, page):
    cluster, _ = live
    go(page, "#/topic/made-in-console")
    page.locator("#topic-partitions tr[data-partition]").first.wait_for()
    page.click("#delete-topic")
    assert page.locator("#confirm-dialog").is_visible()
    shot(page, "delete-topic-confirm")
    page.click("#confirm-cancel")
    with Admin(cluster.bootstrap_servers) as admin:
        assert "made-in-console" in admin.list_topics()
    page.click("#delete-topic")
    page.click("#confirm-ok")
    page.wait_for_function("location.hash === '#/'")
    with Admin(cluster.bootstrap_servers) as admin:
        cluster.wait_for(lambda: "made-in-console" not in admin.list_topics(),
                         "the topic to be deleted", timeout=30)


def partition_row(page, topic: str, partition: int):
    return page.locator(f'tr[data-topic="{topic}"][data-partition="{partition}"]')


def test_page_follows_a_leader_kill_without_reload(live, page, browser):
    cluster, console = live
    go(page, "#/")
    row = partition_row(page, "watched", 0)
    row.wait_for()
    leader = cluster.leader_of("watched", 0)
    assert row.locator("td.leader").inner_text() == str(leader)
    assert sorted(row.locator("td.isr").inner_text().split(",")) == ["1", "2", "3"]
    assert page.locator("#broker-banner").is_hidden()
    shot(page, "before-kill")
    page.evaluate("window.__sameDocument = 'yes'")

    cluster.kill(leader)
    killed_at = time.monotonic()
    # The banner names the stopped broker within the poll interval (and some slack).
    page.locator(f'#broker-banner [data-down-broker="{leader}"]').wait_for(timeout=10_000)
    banner_after = time.monotonic() - killed_at
    assert page.locator(f'#brokers tr[data-broker-id="{leader}"]').get_attribute(
        "data-reachable") == "false"
    new_leader = cluster.wait_for_leader("watched", 0, timeout=60, not_=leader)
    cluster.wait_for(lambda: leader not in cluster.isr_of("watched", 0),
                     "the dead leader leaves the ISR", timeout=60)
    seen_at = time.monotonic()
    # The page catches up on its own (polling), within a few seconds.
    page.wait_for_function(
        """([leader, dead]) => {
            const row = document.querySelector('tr[data-topic="watched"][data-partition="0"]');
            if (!row) return false;
            const isr = row.querySelector('td.isr').textContent.split(',');
            return row.querySelector('td.leader').textContent === String(leader)
                && isr.length === 2 && !isr.includes(String(dead));
        }""", arg=[new_leader, leader], timeout=8_000)
    lag = time.monotonic() - seen_at
    assert page.evaluate("window.__sameDocument") == "yes"  # no reload happened
    assert "under-replicated" in (row.get_attribute("class") or "")
    shot(page, "after-kill")
    print(f"banner {banner_after:.2f} s after the kill; "
          f"page showed the new leader {lag:.2f} s after ZooKeeper did")
    # Swagger UI renders the API from the console's own files (no internet).
    docs = browser.new_page()
    try:
        outside = []
        docs.on("request", lambda r: r.url.startswith(console.url) or outside.append(r.url))
        docs.goto(console.url + "api/docs")
        docs.wait_for_selector(".opblock", timeout=30_000)
        assert docs.locator(".opblock").count() >= 14
        assert outside == []
        docs.screenshot(path=str(ARTIFACTS / "console-api-docs.png"))
    finally:
        docs.close()
