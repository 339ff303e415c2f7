"""The general-purpose classifier and its policy file."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swift_dss.client.classifier import Classifier, ClassifierConfigError
from swift_dss.policies import available, load_policy, policy_path
from swift_dss.sizes import format_size, parse_size

KiB, MiB, GiB = 2**10, 2**20, 2**30


@pytest.fixture(scope="module")
def by_type() -> Classifier:
    return Classifier.load()


@pytest.fixture(scope="module")
def by_size() -> Classifier:
    return Classifier.load("classifier", "size")


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("report.pdf", 25),
        ("notes.TXT", 25),
        ("slides.pptx", 25),
        ("holiday.JPG", 26),
        ("scan.tiff", 26),
        ("song.mp3", 27),
        ("track.flac", 27),
        ("clip.mkv", 28),
        ("movie.mp4", 28),
        ("vm.vmdk", 29),
        ("vm.qcow2", 29),
        ("vm.vdi", 29),
        ("disk.img", 29),
        ("disk.vhd", 29),
    ],
)
def test_types_get_user1_to_user5(by_type: Classifier, name: str, cls: int) -> None:
    assert by_type.classify(name, 1000) == cls


@pytest.mark.parametrize(
    ("name", "cls", "mime"),
    # In no extension list, but in Python's built-in MIME map.
    [("a.movie", 28, "video/x-sgi-movie"), ("a.ief", 26, "image/ief"), ("a.ra", 27, "audio/")],
)
def test_mime_type_when_extension_unlisted(
    by_type: Classifier, name: str, cls: int, mime: str
) -> None:
    got, why = by_type.explain(name, 1000)
    assert got == cls
    assert f"MIME type {mime}" in why


def test_unknown_type_falls_back_to_files(by_type: Classifier) -> None:
    cls, why = by_type.explain("blob.zzqq", 10)
    assert cls == 25
    assert "no known type" in why and "files" in why


def test_large_objects_get_user7(by_type: Classifier) -> None:
    assert by_type.classify("song.mp3", 10 * MiB) == 27  # not above the threshold
    cls, why = by_type.explain("song.mp3", 10 * MiB + 1)
    assert cls == 31
    assert "large object" in why and "USER7" in why
    assert by_type.classify("vm.vmdk", 2 * GiB) == 31


def test_threshold_override() -> None:
    c = Classifier.load(large_object_threshold="100MiB")
    assert c.classify("clip.mkv", 50 * MiB) == 28
    assert c.classify("clip.mkv", 101 * MiB) == 31


def test_size_unknown_still_classifies_by_type(by_type: Classifier) -> None:
    cls, _ = by_type.explain("nonexistent/clip.webm")
    assert cls == 28


def test_existing_file_size_is_used(by_type: Classifier, tmp_path: Path) -> None:
    f = tmp_path / "x.png"
    f.write_bytes(b"\0" * 100)
    assert by_type.classify(f) == 26
    with open(f, "r+b") as fh:
        fh.truncate(11 * MiB)
    assert by_type.classify(f) == 31


@pytest.mark.parametrize(
    ("size", "cls"),
    [
        (0, 11),
        (4 * KiB, 11),
        (4 * KiB + 1, 12),
        (16 * KiB, 12),
        (64 * KiB, 13),
        (256 * KiB, 14),
        (256 * KiB + 1, 15),
        (1 * MiB, 15),
        (4 * MiB, 16),
        (16 * MiB, 17),
        (64 * MiB, 18),
        (256 * MiB, 19),
        (1 * GiB, 20),
        (1 * GiB + 1, 21),
        (5 * GiB, 21),
    ],
)
def test_size_scheme_buckets(by_size: Classifier, size: int, cls: int) -> None:
    assert by_size.classify("any.jpg", size) == cls


@given(st.integers(min_value=0, max_value=2**40))
def test_size_classes_follow_table_ii(size: int) -> None:
    cls = Classifier.load("classifier", "size").classify("f", size)
    if size <= 256 * KiB:
        assert 11 <= cls <= 14
    else:
        assert 15 <= cls <= 22


def test_size_scheme_needs_a_size(by_size: Classifier) -> None:
    with pytest.raises(ValueError, match="size"):
        by_size.explain("nonexistent.bin")


def test_schemes_listed() -> None:
    assert set(Classifier.schemes()) == {"type", "size"}


def test_policy_lookup() -> None:
    assert "classifier" in available()
    assert policy_path("classifier") == policy_path("classifier.toml")
    assert load_policy("classifier")["default_scheme"] == "type"
    with pytest.raises(FileNotFoundError, match="classifier"):
        policy_path("no-such-policy")


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "custom.toml"
    p.write_text(text)
    return p


def test_custom_policy_file(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        """
        [schemes.mine]
        kind = "type"
        [schemes.mine.categories.logs]
        class = 40
        extensions = [".LOG"]
        """,
    )
    c = Classifier.load(p)
    assert c.classify("app.log", 10) == 40
    assert c.explain("x.bin", 10) == (0, "no known type (extension .bin): unclassified")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x = 1", "no \\[schemes"),
        ('[schemes.a]\nkind = "other"', "kind"),
        ('[schemes.a]\nkind = "size"\nbuckets = [{max = 10, class = 300}]', "300"),
        ('[schemes.a]\nkind = "size"\nbuckets = [{class = 1}, {max = 5, class = 2}]', "grow"),
        ('[schemes.a]\nkind = "size"\nbuckets = [{max = "lots", class = 1}]', "lots"),
        ('[schemes.a]\nkind = "type"\n[schemes.a.categories.c]\nclass = "x"', "integer"),
        (
            '[schemes.a]\nkind = "type"\n[schemes.a.categories.c]\nclass = 1\nextensions = ["a"]'
            '\n[schemes.a.categories.d]\nclass = 2\nextensions = ["a"]',
            "also in c",
        ),
        ('[schemes.a]\nkind = "type"\nfallback = "zz"\n[schemes.a.categories.c]\nclass = 1', "zz"),
        ("[schemes.a", "custom.toml"),
    ],
)
def test_bad_policy_files(tmp_path: Path, text: str, message: str) -> None:
    p = _write(tmp_path, text)
    with pytest.raises((ClassifierConfigError, ValueError), match=message):
        Classifier.load(p)


TYPE_SCHEME = '[schemes.a]\nkind = "type"\n'
SIZE_SCHEME = '[schemes.a]\nkind = "size"\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("this is = = not toml", "custom.toml: Expected '='"),
        ("schemes = 5", "schemes must be a table"),
        ("[schemes]\na = 5", "schemes.a must be a table, not 5"),
        ("default_scheme = [1]\n" + SIZE_SCHEME + "buckets = [{class = 1}]", "default_scheme"),
        (TYPE_SCHEME + "categories = { files = 5 }", "schemes.a.categories.files must be a table"),
        (TYPE_SCHEME + "categories = 5", "schemes.a.categories must be a table"),
        (TYPE_SCHEME + "categories = { c = { class = 1, label = 2 } }", "c.label must be a"),
        (TYPE_SCHEME + "description = 3\ncategories = { c = { class = 1 } }", "a.description"),
        (TYPE_SCHEME + "fallback = [1]\ncategories = { c = { class = 1 } }", "fallback"),
        (
            TYPE_SCHEME + "large_object_threshold = [1]\ncategories = { c = { class = 1 } }",
            "a.large_object_threshold must be a byte count",
        ),
        (SIZE_SCHEME + "buckets = [{max = [4], class = 1}]", r"a.buckets\[0\].max must be"),
    ],
)
def test_malformed_policy_is_a_config_error_naming_the_field(
    tmp_path: Path, text: str, message: str
) -> None:
    p = _write(tmp_path, text)
    with pytest.raises(ClassifierConfigError, match=message):
        Classifier.load(p)


@pytest.mark.parametrize(
    "text", ["[schemes]\na = 5", "schemes = 5", "[schemes.a]\ndescription = 1"]
)
def test_schemes_of_a_malformed_policy(tmp_path: Path, text: str) -> None:
    with pytest.raises(ClassifierConfigError, match=r"custom\.toml: schemes"):
        Classifier.schemes(_write(tmp_path, text))


def test_policy_that_is_not_text_is_a_config_error(tmp_path: Path) -> None:
    p = tmp_path / "bin.toml"
    p.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ClassifierConfigError, match=r"bin\.toml: not UTF-8"):
        Classifier.load(p)
    with pytest.raises(ClassifierConfigError, match=r"bin\.toml: not UTF-8"):
        Classifier.schemes(p)


def test_unknown_scheme() -> None:
    with pytest.raises(ClassifierConfigError, match="type, size"):
        Classifier.load("classifier", "nope")


@pytest.mark.parametrize(
    ("text", "n"),
    [("0", 0), ("17", 17), ("4KiB", 4096), ("4KB", 4096), ("4k", 4096), ("1.5M", 3 * MiB // 2)],
)
def test_parse_size(text: str, n: int) -> None:
    assert parse_size(text) == n


@pytest.mark.parametrize("text", ["", "-1", "1X", "MiB", "1 2"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_size(text)


def test_format_size() -> None:
    assert [format_size(n) for n in (0, 1023, 1024, 1536, 10 * MiB)] == [
        "0 B",
        "1023 B",
        "1 KiB",
        "1.5 KiB",
        "10 MiB",
    ]
