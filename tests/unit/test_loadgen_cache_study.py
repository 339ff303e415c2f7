"""The cache emulator over a small synthetic trace against the local server."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from swift_dss.cli import main
from swift_dss.loadgen.cache_study import StudyConfig, read_trace, study, synthetic_trace
from swift_dss.loadgen.localserver import LocalServer
from swift_dss.loadgen.protocols import S3

KIB = 1024


def test_bigger_chunks_hit_more_and_prefetching_fetches_ahead(tmp_path: Path) -> None:
    sizes, trace = synthetic_trace(files=3, accesses=60, min_size=64 * KIB, max_size=512 * KIB,
                                   io_size=8 * KIB, seed=3)  # fmt: skip
    cfg = StudyConfig(chunk_sizes=(16 * KIB, 128 * KIB), cache_bytes=4 << 20, flush_every=25)
    with LocalServer(store=True) as srv:
        doc = study(S3(srv.url, "a", "b"), cfg, sizes, trace, tmp_path)
        left = dict(srv.state.objects)
    rows = {(r["chunk_size"], r["prefetch"]): r for r in doc["rows"]}
    assert len(rows) == 4
    for r in rows.values():
        assert r["failed_fetches"] == 0
        assert 0 <= r["read_hit_ratio"] <= 1
    small, large = rows[(16 * KIB, False)], rows[(128 * KIB, False)]
    # Sequential 8 KiB accesses: a 128 KiB chunk serves 16 of them per fetch, 16 KiB only 2.
    assert large["read_hit_ratio"] > small["read_hit_ratio"]
    assert rows[(16 * KIB, True)]["read_hit_ratio"] > small["read_hit_ratio"]
    assert rows[(16 * KIB, True)]["objects_fetched"] >= small["objects_fetched"]
    assert (tmp_path / "cache_study.png").exists()
    assert left == {}


def test_a_synthetic_trace_needs_files_of_some_size() -> None:
    with pytest.raises(ValueError, match="above 0 bytes"):
        synthetic_trace(max_size=0)


def test_a_trace_names_its_files_as_it_likes(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("op,file,offset,length\n# a comment\nr,/home/a,0,100\nwrite,7,50,10\n"
                    "R,/home/a,200,50\n")  # fmt: skip
    sizes, trace = read_trace(path)
    assert [(a.op, a.file, a.offset, a.length) for a in trace] == [
        ("r", 0, 0, 100), ("w", 1, 50, 10), ("r", 0, 200, 50)]  # fmt: skip
    assert sizes == {0: 250, 1: 60}


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("r,a,0\n", ["line 1", "'r,a,0'"]),
        ("op,file,offset,length\nr,a,0,10\nx,a,0,10\n", ["line 3", "op r or w"]),
        ("r,a,-5,10\n", ["line 1"]),
        ("w,a,0,0\n", ["line 1", "length from 1"]),
        ("r,,0,10\n", ["line 1"]),
        ("r,a,0,10,9\n", ["line 1"]),
        ("# only a comment\n", ["no accesses"]),
        ("", ["no accesses"]),
    ],
)
def test_a_bad_trace_is_refused_with_its_line(tmp_path: Path, text: str, words: list[str]) -> None:
    path = tmp_path / "t.csv"
    path.write_text(text)
    with pytest.raises(ValueError) as err:
        read_trace(path)
    for w in [str(path), *words]:
        assert w in str(err.value)


def test_a_binary_trace_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(b"\xff\xfe\x00r,a")
    with pytest.raises(ValueError, match="not a CSV text file"):
        read_trace(path)


@pytest.mark.parametrize("chunks", [(), (0,), (64 * KIB, 6 << 30), (KIB, KIB)])
def test_chunk_sizes_are_checked(chunks: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="chunk sizes"):
        StudyConfig(chunk_sizes=chunks)


@pytest.mark.parametrize(
    ("args", "words"),
    [(["--trace", "TRACE"], "line 1"), (["--chunk-sizes", "0"], "chunk sizes take")],
)
def test_the_command_refuses_bad_input_before_any_request(
    tmp_path: Path, args: list[str], words: str
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("garbage\n")
    # Nothing listens on port 9: the refusal must come before the login.
    args = [str(trace) if a == "TRACE" else a for a in args]
    argv = ["loadgen", "cache-study", "--endpoint", "http://127.0.0.1:9",
            "--out", str(tmp_path / "out"), *args]  # fmt: skip
    r = CliRunner().invoke(main, argv)
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output
    last = r.output.strip().splitlines()[-1]
    assert last.startswith("Error: ") and words in last, last
