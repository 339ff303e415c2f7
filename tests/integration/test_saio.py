"""The all-in-one cluster, stock Swift pipeline (dss=False) on plain directories (tier mode
none): start, serve, report, stop. tests/integration/test_saio_tier.py has it on the tier.

The tests share one cluster and run in file order; the last ones stop it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import swiftclient
from click.testing import CliRunner

from swift_dss.cli import main
from swift_dss.deploy.saio import Saio, SaioConfig, SaioError, read_proc

from .helpers import s3_client

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Saio]:
    cfg = SaioConfig(dir=tmp_path_factory.mktemp("saio") / "c", port=0, dss=False, tier_mode=None)
    saio = Saio(cfg)
    try:
        saio.up()
        yield saio
    finally:
        if saio.state_path.exists():
            saio.down()


@pytest.fixture(scope="module")
def pids(cluster: Saio) -> dict[str, int]:
    """Pids of every process of the cluster, workers included, taken while it runs."""
    found = {}
    for name, proc in cluster.status()["processes"].items():
        for entry in Path("/proc").iterdir():
            info = read_proc(int(entry.name)) if entry.name.isdigit() else None
            if info and info[1] == proc["pid"]:
                found[f"{name}/{entry.name}"] = int(entry.name)
    return found


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_status_reports_live_processes(cluster: Saio, pids: dict[str, int]) -> None:
    status = cluster.status()
    assert status["up"]
    expected = {"memcached", "account-server", "container-server", "object-server", "proxy-server"}
    assert set(status["processes"]) == expected
    assert all(p["alive"] for p in status["processes"].values())
    assert status["ports"]["proxy"] == cluster.port != 0
    assert status["urls"]["auth"] == f"http://127.0.0.1:{cluster.port}/auth/v1.0"
    assert os.path.ismount(cluster.dir / "devices")
    assert len(pids) > len(expected)  # the Swift servers' workers too


def test_swift_config_is_the_clusters_own(cluster: Saio) -> None:
    conf = (cluster.dir / "proxy-server.conf").read_text()
    assert " dss " not in conf.split("pipeline = ", 1)[1].splitlines()[0]
    object_conf = (cluster.dir / "object-server.conf").read_text()
    assert "use = egg:swift#object" in object_conf
    # Plain devices: Swift's own write size.
    assert "network_chunk_size" not in object_conf
    conn = swiftclient.Connection(cluster.auth_url, cluster.user, cluster.key)
    # The policy name comes from DIR/swift.conf, not Swift's default "Policy-0".
    info = conn.get_capabilities()
    assert [p["name"] for p in info["swift"]["policies"]] == ["gold", "silver"]
    # Both kinds of versioning are on, as in Swift's own all-in-one.
    assert "versioned_writes" in info and "object_versioning" in info


def test_swift_put_get(cluster: Saio) -> None:
    conn = swiftclient.Connection(cluster.auth_url, cluster.user, cluster.key)
    conn.put_container("c1")
    body = os.urandom(100_000)
    conn.put_object("c1", "o1", body, headers={"X-Object-Meta-Color": "blue"})
    headers, got = conn.get_object("c1", "o1")
    assert got == body
    assert headers["x-object-meta-color"] == "blue"
    assert conn.get_auth()[0] == cluster.account_url


def test_s3_put_get(cluster: Saio) -> None:
    s3 = s3_client(cluster)
    s3.create_bucket(Bucket="bucket1")
    s3.put_object(Bucket="bucket1", Key="k/1", Body=b"s3 data")
    assert s3.get_object(Bucket="bucket1", Key="k/1")["Body"].read() == b"s3 data"
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="bucket1")["Contents"]] == ["k/1"]


def test_logs_go_to_files(cluster: Saio) -> None:
    log = (cluster.dir / "log" / "proxy-server.log").read_text()
    assert "GET /auth/v1.0" in log  # proxy-logging's access log line


def test_cli_status(cluster: Saio) -> None:
    code, out = cli("saio", "status", "--dir", str(cluster.dir), "--json")
    assert code == 0, out
    assert json.loads(out)["ports"]["proxy"] == cluster.port
    code, out = cli("saio", "status", "--dir", str(cluster.dir / "nothing-here"))
    assert code != 0
    assert out.strip().startswith("Error: no cluster in")


def test_second_up_fails_clearly(cluster: Saio, tmp_path: Path) -> None:
    other = tmp_path / "other"
    port = str(cluster.port)
    code, out = cli(
        "saio", "up", "--dir", str(other), "--port", port, "--no-dss", "--tier-mode", "none"
    )
    assert code != 0
    assert out.strip() == f"Error: port {cluster.port} is already in use on 127.0.0.1"
    assert not os.path.ismount(other / "devices")
    with pytest.raises(SaioError, match="already running"):
        Saio(SaioConfig(dir=cluster.dir, port=0, dss=False, tier_mode=None)).up()
    assert cluster.is_up()


@pytest.mark.parametrize(
    ("option", "value"),
    [("--devices", "0"), ("--devices", "65"), ("--replicas", "9"), ("--workers", "1000")],
)
def test_cluster_shapes_past_the_bounds_are_refused(
    tmp_path: Path, option: str, value: str
) -> None:
    code, out = cli("saio", "up", "--dir", str(tmp_path / "c"), "--port", "0", option, value)
    assert code == 2
    assert f"Invalid value for '{option}'" in out.strip().splitlines()[-1]
    assert not (tmp_path / "c").exists()


def test_cli_down_stops_everything(cluster: Saio, pids: dict[str, int]) -> None:
    code, out = cli("saio", "down", "--dir", str(cluster.dir))
    assert code == 0, out
    left = {name: pid for name, pid in pids.items() if (info := read_proc(pid)) and info[0] != "Z"}
    assert not left
    assert not os.path.ismount(cluster.dir / "devices")
    code, out = cli("saio", "status", "--dir", str(cluster.dir))
    assert code != 0
