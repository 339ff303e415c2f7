"""`dss deploy generate` on inventories it must refuse, and units systemd reads as meant."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from swift_dss.deploy import generate as generate_module
from swift_dss.deploy.deploy_cli import deploy
from swift_dss.deploy.inventory import InventoryError, parse_inventory
from swift_dss.deploy.unit_syntax import exec_line, exec_word

EXAMPLE = Path(__file__).parents[2] / "swift_dss" / "deploy" / "inventory.example.yaml"
VENV_BIN = Path(sys.executable).parent


def example() -> dict[str, Any]:
    return yaml.safe_load(EXAMPLE.read_text())


def generate(tmp_path: Path, data: dict[str, Any], out: str = "out") -> Result:
    inv = tmp_path / "inv.yaml"
    inv.write_text(yaml.safe_dump(data, allow_unicode=True))
    return CliRunner().invoke(deploy, ["generate", str(inv), "--out", str(tmp_path / out)])


def assert_one_line_error(result: Result, message: str) -> None:
    assert result.exit_code == 1, result.output
    assert result.output.strip().splitlines() == [f"Error: {message}"]


@pytest.mark.parametrize("ports", [5, [1, 2], "6200"])
def test_ports_that_are_not_a_mapping_are_refused(tmp_path: Path, ports: object) -> None:
    data = example()
    data["cluster"]["ports"] = ports
    assert_one_line_error(
        generate(tmp_path, data),
        "cluster.ports must be a mapping of account, container and object to a port",
    )
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("workers", "\u0663", "cluster.workers must be auto or a whole number, not '\u0663'"),
        ("proxy_workers", "\u00b2", "cluster.proxy_workers must be auto or a whole number"),
        ("memcache_servers", ["host:\u0663"], "cluster.memcache_servers: 'host:\u0663' is not"),
        ("memcache_servers", ["host:\u00b2"], "cluster.memcache_servers: 'host:\u00b2' is not"),
        ("bin_dir", "/usr/local/bin\n/x", "cluster.bin_dir must not contain control characters"),
    ],
)
def test_values_only_ascii_digits_and_plain_text(key: str, value: object, message: str) -> None:
    data = example()
    data["cluster"][key] = value
    with pytest.raises(InventoryError, match=message):
        parse_inventory(data)


@pytest.mark.parametrize("path", ["/mnt/my ssd", "/mnt/a\tb", '/mnt/"q"', "/mnt/a\\b"])
def test_tier_paths_a_mount_dependency_cannot_hold_are_refused(path: str) -> None:
    data = example()
    data["storage"][0]["devices"][0]["ssd"] = path
    with pytest.raises(InventoryError, match=r"storage\[0\].devices\[0\].ssd: .* must not contain"):
        parse_inventory(data)


def test_an_inventory_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    inv = tmp_path / "inv.yaml"
    inv.write_bytes(b"cluster: {user: \x90}\n")
    result = CliRunner().invoke(deploy, ["generate", str(inv), "--out", str(tmp_path / "o")])
    assert_one_line_error(result, f"{inv} is not UTF-8 text (byte 16)")


@pytest.mark.parametrize(
    ("word", "written"),
    [
        ("/usr/bin/x", "/usr/bin/x"),
        ("/etc/swift dir/a.conf", '"/etc/swift dir/a.conf"'),
        ("50%", '"50%%"'),
        ("$HOME", '"$$HOME"'),
        ('a"b\\c', '"a\\"b\\\\c"'),
        (";", '";"'),
        ("", '""'),
        ("a\nb", '"a\\nb"'),
    ],
)
def test_exec_words_are_quoted_as_systemd_reads_them(word: str, written: str) -> None:
    assert exec_word(word) == written
    assert exec_line(["/bin/echo", word]) == f"/bin/echo {written}"


def units(out: Path, node: str) -> Path:
    return out / "nodes" / node / "etc" / "systemd" / "system"


def service(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if line[:1].isupper())


def test_paths_with_spaces_are_quoted_in_the_units(tmp_path: Path) -> None:
    data = example()
    data["cluster"].update(swift_dir="/etc/swift dir", devices_root="/srv/my node")
    assert generate(tmp_path, data).exit_code == 0
    out = tmp_path / "out"
    proxy = service(units(out, "proxy1") / "swift-proxy-server.service")
    assert proxy["ExecStart"] == (
        '/usr/local/bin/swift-proxy-server "/etc/swift dir/proxy-server.conf"'
    )
    obj = service(units(out, "store1") / "swift-object-server.service")
    assert obj["ExecStart"].endswith(' "/etc/swift dir/object-server.conf"')
    tier = service(units(out, "store1") / "dss-tier-d1.service")
    assert tier["ExecStartPre"] == '/bin/mkdir -p "/srv/my node/d1"'
    assert tier["ExecStart"].endswith(' "/srv/my node/d1"')
    assert tier["ExecStartPost"].endswith(' sh "/srv/my node/d1"')
    assert '"$$1"' in tier["ExecStartPost"]
    assert tier["ExecStop"] == '/usr/local/bin/dss-tier umount "/srv/my node/d1"'
    conf = (out / "nodes" / "store1" / "etc" / "swift dir" / "object-server.conf").read_text()
    assert "devices = /srv/my node\n" in conf


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="needs systemd-analyze")
def test_units_with_awkward_paths_verify_clean(tmp_path: Path) -> None:
    # systemd-analyze checks that every command exists: a bin_dir with a space and a %
    # holding the real commands shows that systemd finds them under the written names.
    bin_dir = tmp_path / "bin dir%x"
    bin_dir.mkdir()
    for cmd in ("dss-tier", "swift-reload", "swift-proxy-server", "swift-object-server"):
        if not (VENV_BIN / cmd).exists():
            pytest.skip(f"{cmd} is not installed")
        (bin_dir / cmd).symlink_to(VENV_BIN / cmd)
    data = example()
    data["cluster"].update(bin_dir=str(bin_dir), devices_root="/srv/my node$x")
    data["storage"][0]["devices"][0]["ssd"] = "/mnt/ssd%1"
    assert generate(tmp_path, data).exit_code == 0
    for node, names in (
        ("proxy1", ["swift-proxy-server.service"]),
        ("store1", ["dss-tier-d1.service", "swift-object-server.service"]),
    ):
        done = subprocess.run(
            ["systemd-analyze", "verify", "--man=no", *names],
            cwd=units(tmp_path / "out", node),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert (done.returncode, done.stdout + done.stderr) == (0, ""), node


def test_a_failed_generate_leaves_no_partial_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> dict[str, str]:
        raise OSError("disk full")

    # Rings and the proxy's tree are written by then.
    monkeypatch.setattr(generate_module, "storage_units", broken)
    assert_one_line_error(generate(tmp_path, example()), "disk full")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inv.yaml"]


def test_a_new_out_appears_whole_and_an_existing_one_is_written_into(tmp_path: Path) -> None:
    assert generate(tmp_path, example(), out="new/out").exit_code == 0
    assert (tmp_path / "new" / "out" / "manifest.json").is_file()
    assert [p.name for p in (tmp_path / "new").iterdir()] == ["out"]
    keep = tmp_path / "new" / "out" / "notes.txt"
    keep.write_text("mine")
    assert generate(tmp_path, example(), out="new/out").exit_code == 0
    assert keep.read_text() == "mine"
