"""The testbed's congestion-control setting against a stand-in for /proc/sys/net/ipv4."""

from __future__ import annotations

from pathlib import Path

import pytest

from swift_dss.testbed import congestion


@pytest.fixture
def proc(tmp_path: Path) -> Path:
    (tmp_path / "tcp_available_congestion_control").write_text("reno bbr cubic\n")
    (tmp_path / "tcp_allowed_congestion_control").write_text("reno bbr\n")
    (tmp_path / "tcp_congestion_control").write_text("bbr\n")
    return tmp_path


@pytest.mark.parametrize("name", ["", "cubic", "bbr", "reno", "dctcp", "bpf_cubic"])
def test_kernel_names_and_the_hosts_default_are_accepted(name: str) -> None:
    assert congestion.name_error(name) is None


@pytest.mark.parametrize("name", ["Cubic", "cubic bbr", "../x", "a" * 16, None, 3])
def test_other_names_are_refused(name: object) -> None:
    assert "not a congestion control name" in (congestion.name_error(name) or "")


def test_only_what_the_kernel_has_is_accepted(proc: Path) -> None:
    congestion.check("cubic", proc)
    congestion.check("", proc)
    with pytest.raises(congestion.CongestionError, match=r"'htcp' is not available .*reno, bbr"):
        congestion.check("htcp", proc)
    with pytest.raises(congestion.CongestionError, match="not a congestion control name"):
        congestion.check("HTCP", proc)


def test_the_empty_setting_runs_the_hosts_default(proc: Path) -> None:
    assert congestion.effective("", proc) == "bbr"
    assert congestion.effective("cubic", proc) == "cubic"


def test_allowing_adds_a_missing_name_once(proc: Path) -> None:
    allowed = proc / "tcp_allowed_congestion_control"
    congestion.allow("cubic", proc)
    assert allowed.read_text().split() == ["reno", "bbr", "cubic"]
    congestion.allow("cubic", proc)
    congestion.allow("bbr", proc)
    assert allowed.read_text().split() == ["reno", "bbr", "cubic"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--tcp-congestion", "cubic"], "--tcp-congestion is a testbed setting: add --testbed"),
        (["--testbed", "--tcp-congestion", "nosuchcc"], "'nosuchcc' is not available"),
        (["--testbed", "--tcp-congestion", "Cubic"], "not a congestion control name"),
    ],
)
def test_the_clusters_bad_congestion_control_is_refused_before_anything_starts(
    tmp_path: Path, args: list[str], says: str
) -> None:
    from click.testing import CliRunner

    from swift_dss.deploy.deploy_cli import deploy

    cluster = tmp_path / "c"
    result = CliRunner().invoke(deploy, ["local-cluster", "up", "--dir", str(cluster), *args])
    assert result.exit_code == 2, result.output
    assert says in result.output
    assert not cluster.exists()
