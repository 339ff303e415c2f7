"""The client commands that need no cluster: classfile, classify, and argument checking."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from swift_dss.cli import main
from swift_dss.formats import ClassMap, Version, parse_classfile


def run(*args: str, input: bytes | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=input)


def assert_usage_error(result: Result, *words: str) -> None:
    """A one-line message, a non-zero exit and no traceback."""
    assert result.exit_code != 0, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("Error: "), result.output
    for word in words:
        assert word in last, last


def test_output_nobody_can_take_ends_the_command_in_one_line_or_none(tmp_path: Path) -> None:
    """A reader that has gone ends the command quietly (click's way); a full disk is one
    line, where it was a traceback."""
    cls = tmp_path / "c.cls"
    assert run("classfile", "encode", "--object", "25", "-o", str(cls)).exit_code == 0
    reader, writer = os.pipe()
    os.close(reader)
    dss = [sys.executable, "-c", "from swift_dss.cli import main; main()"]
    with open(writer, "wb") as gone_reader, open("/dev/full", "wb") as full:
        for out, status, said in ((gone_reader, 1, ""), (full, 1, "No space left")):
            proc = subprocess.run(
                [*dss, "classfile", "decode", "--json", str(cls)], stdout=out,
                stderr=subprocess.PIPE, text=True, timeout=60, check=False,
            )  # fmt: skip
            assert proc.returncode == status, proc.stderr
            assert said in proc.stderr and len(proc.stderr.splitlines()) == int(bool(said))


@pytest.mark.parametrize("cls_bytes", ["1", "2", "3", "4"])
def test_encode_decode_object(tmp_path: Path, cls_bytes: str) -> None:
    out = tmp_path / "o.cls"
    r = run("classfile", "encode", "--object", "25", "--cls-bytes", cls_bytes, "-o", str(out))
    assert r.exit_code == 0, r.output
    data = out.read_bytes()
    assert len(data) == 16 + int(cls_bytes)
    cf, rest = parse_classfile(data)
    assert (cf.version, cf.cls_bytes, cf.classmap, rest) == (
        Version.OBJECT,
        int(cls_bytes),
        ClassMap(25),
        b"",
    )
    r = run("classfile", "decode", str(out))
    assert r.exit_code == 0, r.output
    assert r.output.splitlines() == [
        "VER_ID: 0 (object-based)",
        f"CLS_BYTES: {cls_bytes}",
        "X-DSS-Object-Class: 25",
    ]


def test_encode_decode_ranges(tmp_path: Path) -> None:
    out = tmp_path / "r.cls"
    r = run("classfile", "encode", "--ranges", "1024-32-26, 0-64-25", "-o", str(out))
    assert r.exit_code == 0, r.output
    r = run("classfile", "decode", "--json", str(out))
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    assert got["ver_id"] == 1 and got["format"] == "range-based"
    assert got["range_class"] == "0-64-25,1024-32-26"
    assert got["ranges"][0] == {"offset": 0, "length": 64, "class": 25}
    assert got["size"] == 16 + 2 * 9
    assert got["data_bytes"] == 0


def test_encode_decode_blocks_to_stdout() -> None:
    r = run("classfile", "encode", "--blocks", "11,11,12,0", "--block-sectors", "8", "-o", "-")
    assert r.exit_code == 0, r.output
    data = r.stdout_bytes
    cf, _ = parse_classfile(data)
    assert cf.version is Version.BLOCK
    assert cf.classmap == ClassMap.build(0, [(0, 16, 11), (16, 8, 12), (24, 8, 0)])
    assert "block-based" in r.stderr
    r = run("classfile", "decode", "-", input=data + b"payload")
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[1:] == [
        "CLS_BYTES: 1",
        "X-DSS-Object-Class: 0",
        "X-DSS-Range-Class: 0-16-11,16-8-12,24-8-0",
        "data: 7 bytes after the 20-byte class file",
    ]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ([], ["exactly one"]),
        (["--object", "1", "--ranges", "0-1-2"], ["exactly one"]),
        (["--object", "256"], ["--object", "256"]),
        (["--object", "x"], ["--object"]),
        (["--ranges", "0-8-1,4-8-2"], ["--ranges", "overlaps"]),
        (["--ranges", "0-8"], ["--ranges", "offset-length-class"]),
        (["--ranges", "0-8-256"], ["--ranges", "256"]),
        (["--blocks", "1,2"], ["--block-sectors"]),
        (["--blocks", "1,,2", "--block-sectors", "8"], ["--blocks"]),
        (["--blocks", "1,999", "--block-sectors", "8"], ["--blocks", "999"]),
        (["--blocks", "1", "--block-sectors", "0"], ["--block-sectors"]),
        (["--object", "1", "--cls-bytes", "5"], ["--cls-bytes"]),
        (["--blocks", ",".join(str(i % 2) for i in range(2050)), "--block-sectors", "1"], ["1024"]),
    ],
)
def test_encode_rejects(tmp_path: Path, args: list[str], words: list[str]) -> None:
    out = tmp_path / "x.cls"
    assert_usage_error(run("classfile", "encode", *args, "-o", str(out)), *words)
    assert not out.exists()


def test_encode_needs_output() -> None:
    assert_usage_error(run("classfile", "encode", "--object", "1"), "-o")


def test_encode_refuses_an_unwritable_output_before_encoding(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    out = blocker / "x.cls"
    r = run("classfile", "encode", "--object", "1", "-o", str(out))
    assert_usage_error(r, f"cannot write {out}", "not a directory")


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"", ["truncated"]),
        (b"XX" + bytes(14), ["magic"]),
        (b"DS\x07\x01" + bytes(12), ["VER_ID"]),
        (b"DS\x00\x09" + bytes(12), ["CLS_BYTES"]),
        (b"DS\x00\x01" + b"\x01" + bytes(11) + b"\x05", ["reserved"]),
        (b"DS\x01\x01\x02\x00\x00\x00" + bytes(8) + bytes(9), ["truncated"]),
    ],
)
def test_decode_rejects(tmp_path: Path, data: bytes, words: list[str]) -> None:
    f = tmp_path / "bad.cls"
    f.write_bytes(data)
    assert_usage_error(run("classfile", "decode", str(f)), str(f), *words)


def test_decode_missing_file(tmp_path: Path) -> None:
    assert_usage_error(run("classfile", "decode", str(tmp_path / "nope")), "nope")


def test_classify_files(tmp_path: Path) -> None:
    doc, big = tmp_path / "a.pdf", tmp_path / "b.mp4"
    doc.write_bytes(b"%PDF")
    big.write_bytes(b"")
    with open(big, "r+b") as f:
        f.truncate(20 * 2**20)
    r = run("classify", str(doc), str(big))
    assert r.exit_code == 0, r.output
    lines = [line.split("\t") for line in r.output.splitlines()]
    assert [(p, c) for p, c, _ in lines] == [(str(doc), "25"), (str(big), "31")]
    assert "large object" in lines[1][2]
    r = run("classify", "--scheme", "size", "--json", str(doc), str(big))
    assert [x["class"] for x in json.loads(r.output)] == [11, 18]


def test_classify_names_with_size() -> None:
    r = run("classify", "--size", "3MiB", "x.mp3", "y.vmdk")
    assert r.exit_code == 0, r.output
    assert [line.split("\t")[1] for line in r.output.splitlines()] == ["27", "29"]
    r = run("classify", "--size", "3GiB", "--large-threshold", "4GiB", "y.vmdk")
    assert r.output.split("\t")[1] == "29"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["no/such/file.jpg"], ["no such file", "--size"]),
        (["/"], ["/: not a regular file", "--size"]),
        (["--size", "lots", "a.jpg"], ["lots"]),
        (["--scheme", "nope", "--size", "1", "a.jpg"], ["nope"]),
        (["--policy", "no-such-policy", "--size", "1", "a.jpg"], ["no-such-policy"]),
    ],
)
def test_classify_rejects(args: list[str], words: list[str]) -> None:
    assert_usage_error(run("classify", *args), *words)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--auto", "--class", "25"], ["--auto"]),
        (["--class", "300"], ["--class"]),
        (["--range-class", "0-1"], ["--range-class"]),
        (["--range-class", "0-8-1,0-8-2"], ["--range-class", "overlaps"]),
        (["--via", "object-file"], ["--via object-file"]),
        (["--via", "carrier-pigeon"], ["--via"]),
    ],
)
def test_upload_rejects_before_connecting(
    tmp_path: Path, args: list[str], words: list[str]
) -> None:
    f = tmp_path / "f.txt"
    f.write_text("x")
    url = "http://127.0.0.1:9/auth/v1.0"
    assert_usage_error(run("upload", "-A", url, "c", str(f), *args), *words)


def test_upload_name_needs_one_file(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("a")
    (tmp_path / "b").write_text("b")
    r = run("upload", "--name", "n", "c", str(tmp_path / "a"), str(tmp_path / "b"))
    assert_usage_error(r, "--name")


def test_upload_missing_file(tmp_path: Path) -> None:
    assert_usage_error(run("upload", "c", str(tmp_path / "nope")), "nope")


def test_reclassify_needs_classes() -> None:
    assert_usage_error(run("reclassify", "c", "o"), "--class")


def test_unreachable_server_is_one_line(tmp_path: Path) -> None:
    r = run("classes", "-A", "http://127.0.0.1:9/auth/v1.0", "c", "o")
    assert_usage_error(r)


BAD_POLICIES = [
    (b"this is = = not toml", "Expected '='"),
    (b"\xff\xfe\x00garbage", "not UTF-8"),
    (b'[schemes.t]\nkind="type"\ncategories = { files = 5 }\n', "schemes.t.categories.files"),
    (b'default_scheme = [1]\n[schemes.t]\nkind="size"\nbuckets=[{class=1}]\n', "default_scheme"),
]


@pytest.mark.parametrize(("data", "words"), BAD_POLICIES)
def test_malformed_policy_is_one_line_for_classify_and_upload(
    tmp_path: Path, data: bytes, words: str
) -> None:
    policy, f = tmp_path / "bad.toml", tmp_path / "f.txt"
    policy.write_bytes(data)
    f.write_text("x")
    assert_usage_error(run("classify", "--policy", str(policy), str(f)), f"{policy}: ", words)
    # Refused before any connection: the auth URL leads nowhere.
    url = "http://127.0.0.1:9/auth/v1.0"
    r = run("upload", "-A", url, "--auto", "--policy", str(policy), "c", str(f))
    assert_usage_error(r, f"{policy}: ", words)


@pytest.mark.parametrize(
    "args",
    [
        ["classify", "--scheme", "", "--size", "1", "a.txt"],
        ["upload", "--auto", "--scheme", "", "c", __file__],
    ],
)
def test_empty_scheme_name_is_refused(args: list[str]) -> None:
    assert_usage_error(run(*args), "'--scheme'", "empty")


@pytest.mark.parametrize(
    "args", [["classfile", "encode", "--object", "3", "-o", ""], ["download", "-o", "", "c", "o"]]
)
def test_empty_output_path_is_refused(args: list[str]) -> None:
    assert_usage_error(run(*args), "--output", "empty")


@pytest.mark.parametrize("command", [["classes"], ["download"], ["reclassify", "--class", "25"]])
@pytest.mark.parametrize(
    ("auth", "message"),
    [
        (["-A", "http://h:99999/auth/v1.0"], "'http://h:99999/auth/v1.0': port out of range"),
        (["-A", "http://[::1/auth"], "'http://[::1/auth': invalid IPv6 URL"),
        (
            ["--os-auth-token", "t", "--os-storage-url", "http://h:abc/v1/A"],
            "'http://h:abc/v1/A': port 'abc' is not a number",
        ),
    ],
)
def test_malformed_url_is_one_line(command: list[str], auth: list[str], message: str) -> None:
    r = run(command[0], *auth, *command[1:], "c", "o")
    assert_usage_error(r, f"invalid URL {message}")


def test_upload_with_a_malformed_url_is_one_line(tmp_path: Path) -> None:
    f = tmp_path / "f.txt"
    f.write_text("x")
    r = run("upload", "-A", "http://h:99999/auth/v1.0", "c", str(f))
    assert_usage_error(r, "invalid URL 'http://h:99999/auth/v1.0': port out of range 0-65535")
