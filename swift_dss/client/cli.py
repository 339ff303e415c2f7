"""``dss upload|download|classes|reclassify|classify|classfile``: the client's commands."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

import click

from swift_dss.addresses import address_error
from swift_dss.cli_types import CONTAINER, OBJECT, OutputFile
from swift_dss.client.auth import AuthOptionError, SwiftAuth, auth_options
from swift_dss.client.classes import class_headers, parse_classes
from swift_dss.formats import (
    ClassError,
    ClassMap,
    Version,
    check_class,
    encode_blocks,
    encode_object,
    encode_ranges,
    format_range_class,
    parse_classfile,
    parse_range_class,
    read_classfile,
)
from swift_dss.sizes import parse_size

CLASS = click.IntRange(0, 255)
FORMAT_NAMES = {
    Version.OBJECT: "object-based",
    Version.RANGE: "range-based",
    Version.BLOCK: "block-based",
}


@contextmanager
def _reported() -> Iterator[None]:
    """Turn the client's errors into one-line click errors (non-zero exit, no traceback)."""
    from swift_dss.client.api import DssError
    from swift_dss.client.classifier import ClassifierConfigError

    try:
        yield
    except ClassError as e:
        raise click.UsageError(str(e)) from None
    except (DssError, ClassifierConfigError, OSError) as e:
        raise click.ClickException(str(e)) from None


def _client(auth: SwiftAuth) -> Any:
    from swift_dss.client.api import DssClient

    try:
        return DssClient(auth=auth)
    except AuthOptionError as e:
        raise click.UsageError(str(e)) from None


def _classes_option(object_class: int | None, range_class: str | None) -> ClassMap | None:
    try:
        return parse_classes(object_class, range_class)
    except ClassError as e:
        raise click.BadParameter(str(e), param_hint="'--range-class'") from None


def _header_lines(cmap: ClassMap) -> list[str]:
    return [f"{k}: {v}" for k, v in class_headers(cmap).items()]


def _classes_json(cmap: ClassMap) -> dict[str, Any]:
    return {
        "object_class": cmap.default,
        "range_class": format_range_class(cmap) or None,
        "ranges": [{"offset": r.offset, "length": r.length, "class": r.cls} for r in cmap.ranges],
    }


def _not_empty(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """An option that names something (a file, a scheme) given as '' names nothing."""
    if value == "":
        raise click.BadParameter("must not be empty", ctx=ctx, param=param)
    return value


def _object_name(path: str) -> str:
    """The object name for a file given on the command line, as the swift CLI makes it."""
    parts = [p for p in PurePosixPath(Path(path).as_posix()).parts if p not in ("/", ".")]
    return "/".join(parts)


@click.command()
@click.argument("container", type=CONTAINER)
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--class", "object_class", type=CLASS, help="Class of the whole object.")
@click.option("--range-class", metavar="SPEC", help="Ranges: OFFSET-LENGTH-CLASS[,...] (sectors).")
@click.option("--auto", is_flag=True, help="Let the classifier pick the object class.")
@click.option(
    "--scheme",
    callback=_not_empty,
    help="Classification scheme for --auto (default: the policy's).",
)
@click.option("--policy", default="classifier", show_default=True, help="Classifier policy.")
@click.option(
    "--via",
    type=click.Choice(["headers", "object-file"]),
    default="headers",
    show_default=True,
    help="Send classes as X-DSS-* headers or as a class file before the data.",
)
@click.option(
    "--name", type=OBJECT, help="Object name (one FILE only; default: the path as given)."
)
@auth_options
def upload(
    container: str,
    files: tuple[str, ...],
    object_class: int | None,
    range_class: str | None,
    auto: bool,
    scheme: str | None,
    policy: str,
    via: str,
    name: str | None,
    auth: SwiftAuth,
) -> None:
    """Upload FILEs to CONTAINER with classes."""
    if auto and object_class is not None:
        raise click.UsageError("--auto picks the object class: give --auto or --class, not both")
    if name is not None and len(files) != 1:
        raise click.UsageError("--name needs exactly one FILE")
    if via == "object-file" and not auto and object_class is None and range_class is None:
        raise click.UsageError("--via object-file needs --class, --range-class or --auto")
    given = _classes_option(object_class, range_class)
    names = [name or _object_name(path) for path in files]
    for path, obj in zip(files, names, strict=True):
        if error := address_error(container, obj):
            raise click.UsageError(f"{path}: {error}; give the object a name with --name")
    with _reported():
        classifier = None
        if auto:
            from swift_dss.client.classifier import Classifier

            classifier = Classifier.load(policy, scheme)
        client = _client(auth)
        client.ensure_container(container)
        for path, obj in zip(files, names, strict=True):
            cmap, why = given, ""
            if classifier is not None:
                cls, why = classifier.explain(path)
                cmap = ClassMap.build(cls, given.ranges if given else ())
            etag = client.upload(container, obj, path, cmap, via=via)  # type: ignore[arg-type]
            sent = "no classes" if cmap is None else ", ".join(_header_lines(cmap))
            how = " in a class file" if via == "object-file" else ""
            click.echo(f"{container}/{obj}: {sent}{how} (etag {etag})")
            if why:
                click.echo(f"  auto: {why}")


@click.command()
@click.argument("container", type=CONTAINER)
@click.argument("object_name", metavar="OBJECT", type=OBJECT)
@click.option(
    "-o",
    "--output",
    type=OutputFile(),
    callback=_not_empty,
    help="File to write ('-': standard output; default: the object's last name part).",
)
@auth_options
def download(container: str, object_name: str, output: str | None, auth: SwiftAuth) -> None:
    """Download OBJECT from CONTAINER and print its classes."""
    target = output or PurePosixPath(object_name).name or "object"
    with _reported():
        client = _client(auth)
        if target == "-":
            cmap = client.download(container, object_name, sys.stdout.buffer)
            sys.stdout.buffer.flush()
            for line in _header_lines(cmap):
                click.echo(line, err=True)
            return
        cmap = client.download(container, object_name, target)
    click.echo(f"{container}/{object_name} -> {target}")
    for line in _header_lines(cmap):
        click.echo(line)


@click.command()
@click.argument("container", type=CONTAINER)
@click.argument("object_name", metavar="OBJECT", type=OBJECT)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@auth_options
def classes(container: str, object_name: str, as_json: bool, auth: SwiftAuth) -> None:
    """Print the current classes of OBJECT in CONTAINER."""
    with _reported():
        cmap = _client(auth).classes(container, object_name)
    if as_json:
        click.echo(json.dumps(_classes_json(cmap)))
    else:
        for line in _header_lines(cmap):
            click.echo(line)


@click.command()
@click.argument("container", type=CONTAINER)
@click.argument("object_name", metavar="OBJECT", type=OBJECT)
@click.option("--class", "object_class", type=CLASS, help="Class of the whole object.")
@click.option("--range-class", metavar="SPEC", help="Ranges: OFFSET-LENGTH-CLASS[,...] (sectors).")
@click.option(
    "--via",
    type=click.Choice(["post", "class-file", "get"]),
    default="post",
    show_default=True,
    help="Headers on a POST, a class-file PUT, or headers on a GET.",
)
@auth_options
def reclassify(
    container: str,
    object_name: str,
    object_class: int | None,
    range_class: str | None,
    via: str,
    auth: SwiftAuth,
) -> None:
    """Change the classes of OBJECT without re-uploading it."""
    cmap = _classes_option(object_class, range_class)
    if cmap is None:
        raise click.UsageError("give --class, --range-class or both")
    with _reported():
        _client(auth).reclassify(container, object_name, cmap, via=via)  # type: ignore[arg-type]
    click.echo(f"{container}/{object_name}: {', '.join(_header_lines(cmap))} (via {via})")


@click.command()
@click.argument("files", nargs=-1, required=True)
@click.option(
    "--scheme",
    callback=_not_empty,
    help="Scheme of the policy (default: the policy's default_scheme).",
)
@click.option("--policy", default="classifier", show_default=True, help="Policy name or file.")
@click.option("--size", help="Size to classify by instead of the file's (e.g. 3MiB).")
@click.option("--large-threshold", help="Override the large-object threshold (e.g. 100MiB).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def classify(
    files: tuple[str, ...],
    scheme: str | None,
    policy: str,
    size: str | None,
    large_threshold: str | None,
    as_json: bool,
) -> None:
    """Print the class the classifier gives each FILE, and why (offline)."""
    from swift_dss.client.classifier import Classifier

    try:
        nbytes = None if size is None else parse_size(size)
        threshold = None if large_threshold is None else parse_size(large_threshold)
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    with _reported():
        classifier = Classifier.load(policy, scheme, large_object_threshold=threshold)
        rows = []
        for f in files:
            if nbytes is None and not Path(f).is_file():
                what = "not a regular file" if Path(f).exists() else "no such file"
                raise click.UsageError(f"{f}: {what} (give --size to classify a name)")
            try:
                cls, why = classifier.explain(f, nbytes)
            except ValueError as e:
                raise click.UsageError(str(e)) from None
            rows.append({"file": f, "class": cls, "reason": why})
    if as_json:
        click.echo(json.dumps(rows))
    else:
        for row in rows:
            click.echo(f"{row['file']}\t{row['class']}\t{row['reason']}")


@click.group()
def classfile() -> None:
    """Encode and decode binary class files."""


def _parse_blocks(text: str) -> list[int]:
    values = []
    for item in text.split(","):
        item = item.strip()
        if not item.isdigit():
            raise click.BadParameter(f"{item!r} is not a class", param_hint="'--blocks'")
        try:
            values.append(check_class(int(item)))
        except ClassError as e:
            raise click.BadParameter(str(e), param_hint="'--blocks'") from None
    return values


@classfile.command()
@click.option("--object", "object_class", type=CLASS, help="One class for the whole object.")
@click.option("--ranges", metavar="SPEC", help="OFFSET-LENGTH-CLASS[,...] in sectors.")
@click.option("--blocks", metavar="C,C,...", help="One class per block.")
@click.option("--block-sectors", type=click.IntRange(1, 2**32 - 1), help="Sectors per block.")
@click.option("--cls-bytes", type=click.IntRange(1, 4), default=1, show_default=True)
@click.option(
    "-o",
    "--output",
    required=True,
    type=OutputFile(),
    callback=_not_empty,
    help="File to write ('-': standard output).",
)
def encode(
    object_class: int | None,
    ranges: str | None,
    blocks: str | None,
    block_sectors: int | None,
    cls_bytes: int,
    output: str,
) -> None:
    """Write a class file: object-based, range-based or block-based."""
    if sum(v is not None for v in (object_class, ranges, blocks)) != 1:
        raise click.UsageError("give exactly one of --object, --ranges, --blocks")
    if (blocks is None) != (block_sectors is None):
        raise click.UsageError("--blocks and --block-sectors go together")
    if object_class is not None:
        data = encode_object(object_class, cls_bytes)
    elif ranges is not None:
        try:
            cmap = ClassMap.build(0, parse_range_class(ranges))
        except ClassError as e:
            raise click.BadParameter(str(e), param_hint="'--ranges'") from None
        data = encode_ranges(cmap.ranges, cls_bytes)
    else:
        assert blocks is not None and block_sectors is not None
        data = encode_blocks(_parse_blocks(blocks), block_sectors, cls_bytes)
    try:
        # Refuse to write what a server would refuse to read (limits on ranges and size).
        cf, _ = parse_classfile(data)
    except ClassError as e:
        raise click.UsageError(str(e)) from None
    with _reported():
        if output == "-":
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        else:
            Path(output).write_bytes(data)
    summary = f"{FORMAT_NAMES[cf.version]}, CLS_BYTES {cls_bytes}, {len(data)} bytes"
    click.echo(f"wrote {output}: {summary}", err=output == "-")


def _count_rest(f: BinaryIO) -> int:
    n = 0
    while chunk := f.read(1 << 20):
        n += len(chunk)
    return n


@classfile.command()
@click.argument("file", type=click.File("rb"))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def decode(file: BinaryIO, as_json: bool) -> None:
    """Print a class file's format and classes (FILE may be an object file; '-': stdin)."""
    try:
        cf = read_classfile(file.read)
    except ClassError as e:
        raise click.ClickException(f"{file.name}: {e}") from None
    data_bytes = _count_rest(file)
    if as_json:
        out = {
            "ver_id": int(cf.version),
            "format": FORMAT_NAMES[cf.version],
            "cls_bytes": cf.cls_bytes,
            "size": cf.size,
            **_classes_json(cf.classmap),
            "data_bytes": data_bytes,
        }
        click.echo(json.dumps(out))
        return
    click.echo(f"VER_ID: {int(cf.version)} ({FORMAT_NAMES[cf.version]})")
    click.echo(f"CLS_BYTES: {cf.cls_bytes}")
    for line in _header_lines(cf.classmap):
        click.echo(line)
    if data_bytes:
        click.echo(f"data: {data_bytes} bytes after the {cf.size}-byte class file")
