"""The cluster commands on a state file they cannot use: one line, nothing started."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from swift_dss.cli import main
from swift_dss.deploy.cluster_config import json_error
from swift_dss.deploy.local_cluster import LocalCluster
from swift_dss.deploy.saio import Saio, SaioError

DAMAGED = [
    ("{}", "no config"),
    ('{"processes": {}}', "no config"),
    ("[1]", "not a JSON object"),
    ('{"config": 5}', "config must be an object, not 5"),
    ('{"config": {"port": 8080}}', "config.dir is missing"),
    ('{"config": {"dir": "/x", "port": "80"}}', "config.port must be an integer, not '80'"),
    ('{"config": {"dir": "/x", "tier_mode": 5}}', "config.tier_mode must be a string"),
    ('{"config": {"dir": "/x", "dss_options": {"a": 1}}}', "config.dss_options.a must be a"),
    ('{"config": {"dir": "/x"}, "processes": []}', "processes must be an object"),
    ('{"config": {"dir": "/x"}, "processes": {"p": {"pid": 1}}}', "processes.p.cmd is missing"),
    ('{"config": {"dir": "/x"}, "mounts": [{"path": 1}]}', "mounts[0].path must be a string"),
]


@pytest.fixture(autouse=True)
def _nothing_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: object) -> None:
        raise AssertionError("a cluster was started")

    monkeypatch.setattr(Saio, "up", refuse)
    monkeypatch.setattr(LocalCluster, "up", refuse)


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def assert_one_line(result: Result, message: str) -> None:
    """The last line is "Error: MESSAGE..." (the rest: the value found), no traceback."""
    assert result.exit_code != 0, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.output.strip().splitlines()[-1].startswith(f"Error: {message}"), result.output


@pytest.mark.parametrize(("text", "reason"), DAMAGED)
@pytest.mark.parametrize(
    ("command", "state_file"),
    [
        (["saio", "status"], "saio.json"),
        (["saio", "down"], "saio.json"),
        (["demo"], "saio.json"),
        (["deploy", "local-cluster", "status"], "local-cluster.json"),
    ],
)
def test_a_damaged_state_file_is_one_line(
    tmp_path: Path, command: list[str], state_file: str, text: str, reason: str
) -> None:
    state = tmp_path / state_file
    state.write_text(text)
    assert_one_line(run(*command, "--dir", str(tmp_path)), f"cannot read {state}: {reason}")


def test_local_cluster_records_need_their_node(tmp_path: Path) -> None:
    state = tmp_path / "local-cluster.json"
    state.write_text(
        '{"config": {"dir": "/x"}, "processes": {"p": {"pid": 1, "cmd": [], "log": ""}}}'
    )
    with pytest.raises(SaioError, match=r"processes\.p\.node is missing"):
        LocalCluster.load(tmp_path)
    (tmp_path / "saio.json").write_text(state.read_text())
    assert Saio.load(tmp_path).cfg.dir == Path("/x")


def test_reliability_run_on_a_damaged_cluster_says_what_is_wrong(tmp_path: Path) -> None:
    cluster, out = tmp_path / "cluster", tmp_path / "out"
    cluster.mkdir()
    state = cluster / "local-cluster.json"
    state.write_text('{"config": {"port": 8080}}')
    result = run("reliability", "run", "--cluster", str(cluster), "--out", str(out))
    assert_one_line(result, f"cannot read {state}: config.dir is missing")
    assert not out.exists()


@pytest.mark.parametrize("nodes", ["2", "0", "-1"])
def test_reliability_run_needs_a_node_per_replica(tmp_path: Path, nodes: str) -> None:
    out = tmp_path / "out"
    result = run("reliability", "run", "--nodes", nodes, "--out", str(out))
    assert result.exit_code == 2, result.output
    last = result.output.strip().splitlines()[-1]
    assert (
        last
        == f"Error: Invalid value for '--nodes': must be at least 3 (one per replica), not {nodes}"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("value", "hint", "message"),
    [
        (True, int, "x must be an integer, not True"),
        (1, float, None),
        ([1, "a"], list[int], "x[1] must be an integer, not 'a'"),
        ({"a": None}, dict[str, int | None], None),
        (None, str | None, None),
        ("/p", Path, None),
    ],
)
def test_json_error(value: object, hint: object, message: str | None) -> None:
    assert json_error(value, hint, "x") == message


def test_testbed_settings_this_version_does_not_know_are_left_out(tmp_path: Path) -> None:
    state = '{"config": {"dir": "/x", "testbed": {"dilation": 4, "from_a_later_version": 1}}}'
    (tmp_path / "local-cluster.json").write_text(state)
    testbed = LocalCluster.load(tmp_path).cfg.testbed
    assert testbed is not None and testbed.dilation == 4
