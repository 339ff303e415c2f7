"""The experiments' testbed options reach the testbed's settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from swift_dss.experiment import testbed_options as options
from swift_dss.experiment.cli import scale_options
from swift_dss.experiment.targets import TRAFFIC_TESTBED
from swift_dss.testbed.settings import TestbedSettings


def settings_from(args: list[str]) -> Any:
    seen: list[Any] = []

    @click.command()
    @scale_options
    @lambda f: options.testbed_options(f, TRAFFIC_TESTBED)
    def command(scale_args: Any, testbed: Any, repeats: int | None) -> None:
        seen.append(testbed.settings)

    result = CliRunner().invoke(command, args)
    assert result.exit_code == 0, result.output
    return seen[0]


def test_link_rates_and_the_queue_reach_the_settings_and_the_rest_stay() -> None:
    s = settings_from(
        ["--storage-rate", "100mbit", "--proxy-rate", "1gbit", "--link-queue-ms", "50"]
    )
    assert (s.storage_rate, s.proxy_rate, s.link_queue_ms) == ("100mbit", "1gbit", 50.0)
    assert s.client_rate == TestbedSettings.client_rate
    assert s.dilation == TRAFFIC_TESTBED.dilation
    # The rate that reaches tc is the given one, scaled and dilated as every other.
    assert s.link_rate("s1") == s.dilated.rate(round(100e6 * s.rate_scale))
    assert s.link_rate("client") == s.dilated.rate(round(10e9 * s.rate_scale))


def test_without_the_options_the_testbed_keeps_its_rates() -> None:
    s = settings_from([])
    assert (s.client_rate, s.proxy_rate, s.storage_rate) == ("10gbit", "10gbit", "1gbit")
    assert s.meta_writes == "sync"


def test_buffered_metadata_writes_reach_each_tier_mount(tmp_path: Path) -> None:
    from swift_dss.deploy.local_cluster_config import LocalClusterConfig

    s = settings_from(["--meta-writes", "buffered"])
    assert s.meta_writes == "buffered"
    cfg = LocalClusterConfig(dir=tmp_path, tier_mode="dss", testbed=s)
    args = cfg.tier_config().tier_options().args()
    assert args[args.index("--meta-writes") + 1] == "buffered"


def test_the_connect_timeout_reaches_the_settings() -> None:
    s = settings_from(["--conn-timeout", "2"])
    assert s.conn_timeout == 2.0
    assert s.proxy_options()["conn_timeout"] == f"{2 * s.dilation:g}"
    assert settings_from([]).conn_timeout == TestbedSettings.conn_timeout


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["--conn-timeout", "2"], 2, "--conn-timeout is a testbed setting: add --testbed"),
        (["--testbed", "--conn-timeout", "-1"], 1, "conn_timeout must be more than 0"),
        (["--testbed", "--conn-timeout", "4000"], 1, "at most 3600 seconds"),
    ],
)
def test_the_clusters_bad_connect_timeout_is_refused_before_anything_starts(
    tmp_path: Path, args: list[str], code: int, says: str
) -> None:
    from swift_dss.deploy.deploy_cli import deploy

    cluster = tmp_path / "c"
    result = CliRunner().invoke(deploy, ["local-cluster", "up", "--dir", str(cluster), *args])
    assert result.exit_code == code and says in result.output, result.output
    assert not cluster.exists()
