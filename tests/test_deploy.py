"""deploy/: the compose file, the Kubernetes manifests, Prometheus and Grafana files.

No container engine runs on these machines, so nothing here starts a
container: ``docker-compose config`` (Debian's docker-compose) checks the
compose file against its schema, kubernetes-validate checks the manifests
against Kubernetes' schemas, and the commands inside both are parsed by our
own CLI and broker configuration, so a wrong flag or setting fails here.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from simplekafka.broker.config import BrokerConfig
from simplekafka.cli import build_parser
from simplekafka.cli.broker_cmd import build_properties

# docker-compose and kubernetes-validate run as processes.
pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
BROKERS = ["broker1", "broker2", "broker3"]


def compose_config(path: Path) -> subprocess.CompletedProcess:
    docker_compose = shutil.which("docker-compose")
    assert docker_compose, "docker-compose is missing: tools/bootstrap.sh installs it"
    return subprocess.run([docker_compose, "-f", str(path), "config"], capture_output=True,
                          text=True, timeout=120, check=False, cwd=path.parent)


@pytest.fixture(scope="module")
def compose():
    result = compose_config(DEPLOY / "docker-compose.yml")
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


@pytest.mark.integration
def test_compose_has_every_service(compose):
    assert set(compose["services"]) == {"zookeeper", *BROKERS, "console", "prometheus",
                                        "grafana"}


@pytest.mark.integration
def test_compose_commands_are_accepted_by_our_cli(compose):
    parser = build_parser()
    for name in BROKERS:
        args = parser.parse_args(compose["services"][name]["command"])
        config = BrokerConfig.from_properties(build_properties(args))
        assert config.broker_id == int(name[-1])
        assert config.metrics_listener == ("0.0.0.0", 9404)
    console = parser.parse_args(compose["services"]["console"]["command"])
    assert console.bootstrap_server == ",".join(f"{b}:9092" for b in BROKERS)


@pytest.mark.integration
def test_prometheus_scrapes_every_broker_and_grafana_is_provisioned(compose):
    prometheus = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    targets = {t for job in prometheus["scrape_configs"]
               for c in job["static_configs"] for t in c["targets"]}
    assert {f"{b}:9404" for b in BROKERS} <= targets
    mounts = compose["services"]["grafana"]["volumes"]
    assert any("grafana/dashboards" in str(m) for m in mounts)
    datasource = yaml.safe_load(
        (DEPLOY / "grafana/provisioning/datasources/prometheus.yml").read_text())
    uid = datasource["datasources"][0]["uid"]
    dashboard = json.loads((DEPLOY / "grafana/dashboards/simplekafka.json").read_text())
    for panel in dashboard["panels"]:
        assert panel["datasource"]["uid"] == uid
        assert panel["targets"] and all(t["expr"] for t in panel["targets"])


def test_dockerfile_copies_what_exists():
    lines = (DEPLOY / "Dockerfile").read_text().splitlines()
    for line in lines:
        if line.startswith("COPY "):
            for source in line.split()[1:-1]:
                assert (ROOT / source).exists(), source
    assert 'ENTRYPOINT ["simplekafka"]' in lines


@pytest.mark.integration
def test_a_broken_compose_file_is_refused(tmp_path):
    broken = (DEPLOY / "docker-compose.yml").read_text().replace(
        "    restart: unless-stopped\n", "    restart: unless-stopped\n    replicas: [x\n", 1)
    (tmp_path / "docker-compose.yml").write_text(broken)
    assert compose_config(tmp_path / "docker-compose.yml").returncode != 0


def kubernetes_validate(*paths: Path) -> subprocess.CompletedProcess:
    command = [str(Path(sys.executable).parent / "kubernetes-validate"), "--strict"]
    return subprocess.run([*command, *map(str, paths)], capture_output=True, text=True,
                          timeout=300, check=False)


@pytest.mark.integration
def test_kubernetes_manifests_validate():
    manifests = sorted((DEPLOY / "k8s").glob("*.yaml"))
    assert [m.name for m in manifests] == ["brokers.yaml", "console.yaml", "zookeeper.yaml"]
    result = kubernetes_validate(*manifests)
    assert result.returncode == 0, result.stdout + result.stderr
    kinds = {(d["kind"], d["metadata"]["name"])
             for m in manifests for d in yaml.safe_load_all(m.read_text())}
    assert {("StatefulSet", "simplekafka-broker"), ("Service", "simplekafka-broker"),
            ("StatefulSet", "zookeeper"), ("Deployment", "simplekafka-console")} <= kinds
    headless = next(d for d in yaml.safe_load_all((DEPLOY / "k8s/brokers.yaml").read_text())
                    if d["kind"] == "Service")
    assert headless["spec"]["clusterIP"] == "None"


def test_kubernetes_commands_are_accepted_by_our_cli():
    brokers = list(yaml.safe_load_all((DEPLOY / "k8s/brokers.yaml").read_text()))
    container = next(d for d in brokers if d["kind"] == "StatefulSet")[
        "spec"]["template"]["spec"]["containers"][0]
    script = container["args"][0]
    expanded = script.replace("$(( ${POD_NAME##*-} + 1 ))", "2").replace(
        "${POD_NAME}", "simplekafka-broker-1").replace("${POD_NAMESPACE}", "default")
    words = shlex.split(expanded)
    assert words[:2] == ["exec", "simplekafka"]
    args = build_parser().parse_args(words[2:])
    config = BrokerConfig.from_properties(build_properties(args))
    assert config.broker_id == 2 and config.metrics_listener == ("0.0.0.0", 9404)
    deployment = next(d for d in yaml.safe_load_all((DEPLOY / "k8s/console.yaml").read_text())
                      if d["kind"] == "Deployment")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert build_parser().parse_args(args).port == 8080


@pytest.mark.integration
def test_a_broken_manifest_is_refused(tmp_path):
    broken = (DEPLOY / "k8s/brokers.yaml").read_text().replace("replicas: 3", "replicas: three")
    (tmp_path / "brokers.yaml").write_text(broken)
    assert kubernetes_validate(tmp_path / "brokers.yaml").returncode != 0
