"""The terminal help of every command: what ``simplekafka COMMAND --help`` prints.

The command modules' docstrings are reStructuredText for the documentation;
these texts are plain, written for an 80-column terminal. Each entry is keyed
by the command path (``"topics create"``) and holds the description (a
one-line summary first) and the examples shown at the end of the help.
``build_parser`` applies them; tests/test_cli_help.py checks that every
command and subcommand has one and that no help shows rst markup.
"""

from __future__ import annotations

from typing import NamedTuple


class Help(NamedTuple):
    description: str
    examples: str


_WHERE = """\
Where the cluster is: -b/--bootstrap-server (before or after the command),
else $SIMPLEKAFKA_BOOTSTRAP, else the running cluster of
./simplekafka-cluster/cluster.json (or --dir), else localhost:9092."""

HELP: dict[str, Help] = {
    "": Help(
        "SimpleKafka: run a Kafka-compatible cluster and talk to it.\n\n"
        "Start a cluster with 'simplekafka cluster up'; the client commands (topics,\n"
        "produce, consume, groups, configs, ...) then find it on their own.\n\n" + _WHERE,
        """\
  simplekafka cluster up --brokers 3
  simplekafka topics create orders --partitions 3 --replication-factor 3
  seq 10 | simplekafka produce orders
  simplekafka consume orders --from-beginning --max-messages 10
  simplekafka -b 127.0.0.1:9092 topics list
  simplekafka COMMAND --help"""),
    "inspect": Help(
        "Take a Kafka frame apart, field by field.\n\n"
        "Give it a frame as hex (on stdin, inline with --hex, or in a file) or raw\n"
        "bytes in a file. Requests describe themselves; a response needs --response\n"
        "API_KEY VERSION, since only its request says what it answers. --records\n"
        "reads a bare record set (as in a log segment). Exit status 0 when all\n"
        "decoded, 1 at a bad byte (marked with a caret), 2 for a usage mistake.",
        """\
  simplekafka inspect request.hex
  simplekafka inspect --response metadata 8 response.bin
  simplekafka inspect --records 00000000000000000000.log"""),
    "cluster": Help(
        "Start, stop or inspect a local ZooKeeper + brokers cluster.\n\n"
        "'up' runs the cluster in the background and records pids and ports in\n"
        "DIR/cluster.json, where the client commands find it; 'down' stops it in\n"
        "order (brokers, then ZooKeeper); 'status' says whether each part serves.",
        """\
  simplekafka cluster up --brokers 3
  simplekafka cluster status
  simplekafka cluster down"""),
    "cluster up": Help(
        "Start ZooKeeper and N brokers in the background.\n\n"
        "Broker 1 listens on 127.0.0.1:9092 (Kafka's quick-start port, broker i on\n"
        "9091+i) and ZooKeeper on 2181 when those are free; otherwise on free ports,\n"
        "and 'up' prints the address it took and the line to export for clients in\n"
        "other directories. Client commands run from the directory holding\n"
        "./simplekafka-cluster find the cluster without any address.",
        """\
  simplekafka cluster up
  simplekafka cluster up --brokers 3 --rack a --rack b --rack c
  simplekafka cluster up --set log.retention.ms=60000 --console
  simplekafka cluster up --dir /tmp/c2 --port 0     # any free port"""),
    "cluster down": Help(
        "Stop the cluster started with 'cluster up' (brokers first, then ZooKeeper).",
        """\
  simplekafka cluster down
  simplekafka cluster down --dir /tmp/c2"""),
    "cluster status": Help(
        "Show pids and ports, and whether each part serves.\n\n"
        "The cluster is 'running' when every broker serves, 'degraded' when some\n"
        "do not, 'stopped' after 'cluster down'. Exit status 0 when running, 1\n"
        "otherwise.",
        """\
  simplekafka cluster status
  simplekafka cluster status --dir /tmp/c2"""),
    "spark": Help(
        "Start, stop or inspect a local Spark standalone cluster.\n\n"
        "'up' runs Spark's own master and workers (from the pyspark wheel) in the\n"
        "background on 127.0.0.1, one core each, and records the master URL, the\n"
        "web UI and the pids in DIR/spark.json; a SparkSession joins it with\n"
        "master(URL). 'status' asks the master; 'down' stops workers, then master.",
        """\
  simplekafka spark up --workers 2
  simplekafka spark status
  python -m stages.stage8_spark --master spark://127.0.0.1:PORT
  simplekafka spark down"""),
    "spark up": Help(
        "Start a Spark master and N workers in the background.\n\n"
        "Prints the master URL on its first line (spark://127.0.0.1:PORT, a free\n"
        "port) and writes it to DIR/spark.json as master_url, with the master's\n"
        "web UI as web_ui. Each worker offers 1 core and 768 MiB to executors.",
        """\
  simplekafka spark up
  simplekafka spark up --workers 3 --dir /tmp/spark
  simplekafka spark up --workers 1 | head -1     # just the master URL"""),
    "spark status": Help(
        "Show the master, its ALIVE workers and running applications.\n\n"
        "Exit status 0 when the master runs with every worker ALIVE, 1 otherwise.",
        """\
  simplekafka spark status
  simplekafka spark status --dir /tmp/spark"""),
    "spark down": Help(
        "Stop the Spark cluster started with 'spark up' (workers, then the master).",
        """\
  simplekafka spark down
  simplekafka spark down --dir /tmp/spark"""),
    "zk": Help(
        "Start, stop or inspect the embedded ZooKeeper on its own.",
        """\
  simplekafka zk start --port 2181
  simplekafka zk tree --path /brokers
  simplekafka zk stop"""),
    "zk start": Help(
        "Start ZooKeeper in the background, data in --data-dir.",
        """\
  simplekafka zk start
  simplekafka zk start --port 0 --data-dir /tmp/zk --sasl"""),
    "zk stop": Help(
        "Stop the ZooKeeper started from --data-dir.",
        "  simplekafka zk stop --data-dir /tmp/zk"),
    "zk status": Help(
        "Whether the ZooKeeper of --data-dir runs, and what it says of itself.",
        "  simplekafka zk status"),
    "zk tree": Help(
        "Print the znode tree (and each znode's data) from --path down.",
        """\
  simplekafka zk tree
  simplekafka zk tree --zookeeper 127.0.0.1:2181 --path /brokers/topics"""),
    "broker": Help(
        "Run one broker in the foreground until SIGTERM or Ctrl-C.\n\n"
        "Settings come from --config (a server.properties file), then --set, then\n"
        "the dedicated options; ZooKeeper must run already.",
        """\
  simplekafka broker --broker-id 1 --port 9092 --zookeeper 127.0.0.1:2181
  simplekafka broker --config server.properties --set log.retention.ms=60000"""),
    "topics": Help(
        "Create, list, describe, alter or delete topics, as kafka-topics.sh does.\n\n"
        + _WHERE,
        """\
  simplekafka topics create orders --partitions 3 --replication-factor 2
  simplekafka topics list
  simplekafka topics describe orders
  simplekafka topics alter orders --partitions 6
  simplekafka topics delete orders"""),
    "topics create": Help(
        "Create a topic.",
        """\
  simplekafka topics create orders
  simplekafka topics create orders --partitions 3 --replication-factor 3 \\
      --config retention.ms=60000 --config cleanup.policy=compact
  simplekafka topics create orders --if-not-exists"""),
    "topics list": Help(
        "List topic names, one per line.",
        """\
  simplekafka topics list
  simplekafka topics list -b 127.0.0.1:9092"""),
    "topics describe": Help(
        "Show each partition's leader, replicas and in-sync replicas (ISR).",
        """\
  simplekafka topics describe
  simplekafka topics describe orders payments"""),
    "topics alter": Help(
        "Add partitions to a topic (the count can only grow).",
        "  simplekafka topics alter orders --partitions 6"),
    "topics delete": Help(
        "Delete topics.",
        "  simplekafka topics delete orders payments"),
    "configs": Help(
        "Describe or alter topic and broker configs, as kafka-configs.sh does.\n\n"
        + _WHERE,
        """\
  simplekafka configs --describe --entity-type topics --entity-name orders
  simplekafka configs --alter --entity-type topics --entity-name orders \\
      --add-config retention.ms=60000,cleanup.policy=compact
  simplekafka configs --alter --entity-type brokers --entity-default \\
      --delete-config log.retention.ms"""),
    "quotas": Help(
        "Describe or alter client quotas, as kafka-configs.sh does for users and clients.\n\n"
        "A quota bounds what one user, client id, or user's client id may take of each\n"
        "broker: producer_byte_rate and consumer_byte_rate in bytes per second,\n"
        "request_percentage in percent of one request thread. A client over its quota\n"
        "is answered with throttle_time_ms and not read from for that long.\n\n" + _WHERE,
        """\
  simplekafka quotas alter --client-id reports --add producer_byte_rate=1048576
  simplekafka quotas alter --user alice --client-id-default \\
      --add consumer_byte_rate=2097152,request_percentage=50
  simplekafka quotas describe
  simplekafka quotas alter --client-id reports --delete producer_byte_rate"""),
    "quotas describe": Help(
        "Print the quotas of every entity, or of the entity the options name.",
        """\
  simplekafka quotas describe
  simplekafka quotas describe --user alice
  simplekafka quotas describe --client-id-default"""),
    "quotas alter": Help(
        "Set (--add) or remove (--delete) the quotas of one entity.",
        """\
  simplekafka quotas alter --client-id reports --add producer_byte_rate=1048576
  simplekafka quotas alter --user-default --add request_percentage=200
  simplekafka quotas alter --user alice --client-id app --delete consumer_byte_rate"""),
    "acls": Help(
        "Add, remove or list ACLs, as kafka-acls.sh does.\n\n"
        "With --zookeeper the ACL znodes are written directly (and every broker is\n"
        "notified); with --bootstrap-server the brokers are asked, which needs\n"
        "Alter or Describe on the cluster. --command-config names a Java client's\n"
        "properties file (security.protocol, sasl.mechanism, sasl.jaas.config,\n"
        "ssl.truststore.location, ssl.keystore.location as PEM files).",
        """\
  simplekafka acls add --allow-principal User:alice --operation Read \\
      --topic orders --zookeeper 127.0.0.1:2181
  simplekafka acls list --bootstrap-server 127.0.0.1:9094 \\
      --command-config admin.properties
  simplekafka acls remove --allow-principal User:alice --topic orders \\
      --zookeeper 127.0.0.1:2181"""),
    "users": Help(
        "Add, delete or list SCRAM users in ZooKeeper (kafka-configs for users).\n\n"
        "'add' stores a fresh salt and the salted keys only and notifies every\n"
        "broker: the user can log in at once. 'delete' removes one mechanism's\n"
        "credential (all by default). 'list' prints users with their mechanisms\n"
        "and iterations, never a key.",
        """\
  simplekafka users add alice --password secret --zookeeper 127.0.0.1:2181
  simplekafka users add bob --password pw --mechanism SCRAM-SHA-512 \\
      --zookeeper 127.0.0.1:2181
  simplekafka users list --zookeeper 127.0.0.1:2181
  simplekafka users delete alice --zookeeper 127.0.0.1:2181"""),
    "certs": Help(
        "Write a throwaway CA and broker and client certificates (PEM).\n\n"
        "DIR gets ca.pem (the truststore), ca-key.pem, broker.pem (key and\n"
        "certificate for localhost, 127.0.0.1 and each --host) and client-NAME.pem\n"
        "per --client NAME (principal User:CN=NAME,O=SimpleKafka demo on an SSL\n"
        "listener). For demos and tests only: the CA's key lies beside them.",
        """\
  simplekafka certs --out certs
  simplekafka certs --out certs --client alice --client bob --host myhost"""),
    "produce": Help(
        "Send each line of stdin to a topic as one record, like kafka-console-producer.\n\n"
        "With --key-separator SEP the text before the first SEP is the key.\n"
        "Records are batched; the command exits once every record is\n"
        "acknowledged, non-zero if any failed.\n\n" + _WHERE,
        """\
  echo hello | simplekafka produce greetings
  printf 'k1:v1\\nk2:v2\\n' | simplekafka produce orders --key-separator :
  simplekafka produce orders --acks 1 --compression zstd < records.txt
  simplekafka -b 127.0.0.1:9092 produce orders --header source=cli < records.txt"""),
    "consume": Help(
        "Print the records of a topic, one per line, like kafka-console-consumer.\n\n"
        "Starts at the end of each partition (new records only) unless\n"
        "--from-beginning or --offset says otherwise. Stops after --max-messages,\n"
        "after --idle-timeout-ms without records, or on Ctrl-C. With --group it\n"
        "consumes as a member of that consumer group and commits its offsets.\n\n"
        + _WHERE,
        """\
  simplekafka consume orders --from-beginning
  simplekafka consume orders --from-beginning --max-messages 10 --print-key
  simplekafka consume orders --partition 0 --offset 42 --print-offset
  simplekafka consume orders --group billing --from-beginning
  simplekafka consume orders --from-beginning -f '%p:%o %k=%s\\n'   # kcat's tokens
  simplekafka consume orders --from-beginning -J                     # JSON lines"""),
    "groups": Help(
        "List, describe or delete consumer groups, or reset their offsets, as\n"
        "kafka-consumer-groups.sh does.\n\n" + _WHERE,
        """\
  simplekafka groups list
  simplekafka groups describe billing
  simplekafka groups reset-offsets billing --topic orders --to-earliest --execute
  simplekafka groups delete billing"""),
    "groups list": Help(
        "List every consumer group of the cluster with its protocol type.",
        "  simplekafka groups list"),
    "groups describe": Help(
        "Show a group's offsets and lag per partition, its members, or its state.\n\n"
        "The columns are kafka-consumer-groups.sh's. An unknown group is an error\n"
        "(exit 1).",
        """\
  simplekafka groups describe billing
  simplekafka groups describe billing --members --verbose
  simplekafka groups describe billing --state"""),
    "groups delete": Help(
        "Delete consumer groups that have no members (and their offsets).",
        "  simplekafka groups delete billing old-billing"),
    "groups reset-offsets": Help(
        "Plan new offsets for a group without members; --execute applies them.\n\n"
        "As kafka-consumer-groups.sh does, the plan is printed and nothing changes\n"
        "unless --execute is given.",
        """\
  simplekafka groups reset-offsets billing --topic orders --to-earliest
  simplekafka groups reset-offsets billing --topic orders --to-earliest --execute
  simplekafka groups reset-offsets billing --topic orders:0,1 --shift-by -10 --execute
  simplekafka groups reset-offsets billing --all-topics --by-duration PT1H --export >p.csv
  simplekafka groups reset-offsets billing --from-file p.csv --execute"""),
    "dump-log": Help(
        "Show what a partition directory holds, batch by batch and entry by entry,\n"
        "as kafka-dump-log.sh does.\n\n"
        "Give it segment files (.log, .index, .timeindex, .txnindex), checkpoint\n"
        "files or whole partition directories. Every batch and index entry is\n"
        "checked; files are only read. Exit status 0 when all is well, 1 when\n"
        "something is damaged, 2 for a usage mistake.",
        """\
  simplekafka dump-log simplekafka-cluster/broker-1/data/orders-0
  simplekafka dump-log --records orders-0/00000000000000000000.log"""),
    "leader-election": Help(
        "Make the preferred replicas leaders again (or, over the Kafka protocol,\n"
        "elect unclean leaders), as kafka-leader-election.sh does.\n\n"
        "With --zookeeper it writes /admin/preferred_replica_election and waits\n"
        "for the controller; with --bootstrap-server it sends ElectLeaders, where\n"
        "--election-type UNCLEAN gives partitions without a live leader one,\n"
        "out-of-sync replicas allowed.",
        """\
  simplekafka leader-election --preferred --zookeeper 127.0.0.1:2181
  simplekafka leader-election --election-type preferred --topic orders \\
      --bootstrap-server 127.0.0.1:9092
  simplekafka leader-election --election-type unclean --topic orders \\
      --partition 0 --bootstrap-server 127.0.0.1:9092"""),
    "reassign": Help(
        "Plan and carry out replica moves, as kafka-reassign-partitions.sh does.\n\n"
        "--generate prints the current and a proposed assignment of the topics in\n"
        "--topics-to-move-json-file onto --broker-list (moving only what balance\n"
        "needs). --execute starts the moves of a plan (printing the current\n"
        "assignment, to roll back), optionally throttled; --verify exits 0 once\n"
        "they are done and removes the throttles; --cancel puts what still moves\n"
        "back.\n\n" + _WHERE,
        """\
  simplekafka reassign --generate --topics-to-move-json-file topics.json \\
      --broker-list 1,2,4 --output plan.json
  simplekafka reassign --execute --reassignment-json-file plan.json \\
      --throttle 1000000
  simplekafka reassign --verify --reassignment-json-file plan.json"""),
    "learn": Help(
        "Exercises: build a stage yourself, checked by its tests, then run a\n"
        "cluster on your own code.",
        """\
  simplekafka learn list
  simplekafka learn start 1
  simplekafka learn check 1
  simplekafka learn hint 1 2
  simplekafka learn cluster"""),
    "learn list": Help(
        "List the exercises per stage and your progress in DIR.",
        "  simplekafka learn list my-simplekafka"),
    "learn start": Help(
        "Write a stage's starter module into DIR, to fill in.",
        "  simplekafka learn start 1 my-simplekafka"),
    "learn check": Help(
        "Run a stage's exercises against your code in DIR.",
        """\
  simplekafka learn check 1
  simplekafka learn check 1 --exercise 2"""),
    "learn hint": Help(
        "A graded hint for an exercise: the chapter section first, then the idea.",
        """\
  simplekafka learn hint 1 2
  simplekafka learn hint 1 2 --level 2"""),
    "learn cluster": Help(
        "Run three brokers on your passed exercises: the failover demo, checked.",
        "  simplekafka learn cluster my-simplekafka"),
    "console": Help(
        "Serve the REST API (under /api) and the web console (at /), one process.\n\n"
        "It reaches the cluster only over the Kafka protocol, so it works with any\n"
        "Kafka-compatible cluster. Stop it with Ctrl-C.\n\n" + _WHERE,
        """\
  simplekafka console
  simplekafka console --bootstrap-server 127.0.0.1:9092 --port 0"""),
    "bench": Help(
        "Run the benchmark suite: a table, bench.json and PNG plots.\n\n"
        "Runs the scenarios of benchmarks/suite (from a checkout of the\n"
        "repository) against a cluster it starts, or the broker at\n"
        "--bootstrap-server for the single-broker scenarios. Above a one-minute\n"
        "load average of 1 it refuses to run unless told --noisy.",
        """\
  simplekafka bench --tiny
  simplekafka bench produce --out bench-results
  simplekafka bench latency --bootstrap-server 127.0.0.1:9092"""),
}
