"""General-purpose client-side classification: a class for a file from its type and size.

The schemes are data, in a policy file (swift_dss/policies/classifier.toml by default); see
that file for the format. Two kinds exist: ``type`` (a category per file type, large objects apart)
and ``size`` (file-size buckets).
"""

from __future__ import annotations

import mimetypes
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from swift_dss.formats import ClassError, check_class
from swift_dss.policies import load_policy, policy_path
from swift_dss.sizes import format_size, parse_size

DEFAULT_POLICY = "classifier"


class ClassifierConfigError(ValueError):
    """A classification policy file that cannot be used."""


class Scheme(Protocol):
    name: str
    description: str

    def explain(self, name: str, size: int | None) -> tuple[int, str]: ...


@dataclass(frozen=True)
class Category:
    name: str
    cls: int
    label: str
    extensions: frozenset[str]
    mime_types: frozenset[str]
    mime_prefixes: tuple[str, ...]

    @property
    def title(self) -> str:
        return f"{self.label} ({self.cls})" if self.label else str(self.cls)


@dataclass(frozen=True)
class TypeScheme:
    name: str
    description: str
    categories: tuple[Category, ...]
    fallback: Category | None
    large_object_threshold: int | None
    large_object_class: int
    large_object_label: str

    def category_of(self, name: str) -> tuple[Category | None, str]:
        """The category of a file name and what decided it."""
        ext = Path(name).suffix.lower().lstrip(".")
        if ext:
            for cat in self.categories:
                if ext in cat.extensions:
                    return cat, f"extension .{ext}"
        mime, _ = mimetypes.guess_type(name, strict=False)
        if mime:
            for cat in self.categories:
                if mime in cat.mime_types or mime.startswith(cat.mime_prefixes):
                    return cat, f"MIME type {mime}"
        what = f"extension .{ext}" if ext else "no extension"
        return None, f"no known type ({what})"

    def explain(self, name: str, size: int | None) -> tuple[int, str]:
        threshold = self.large_object_threshold
        if size is not None and threshold is not None and size > threshold:
            cls = self.large_object_class
            label = f"{self.large_object_label} ({cls})" if self.large_object_label else str(cls)
            return cls, (f"large object: {format_size(size)} > {format_size(threshold)} -> {label}")
        cat, why = self.category_of(name)
        if cat is None:
            fb = self.fallback
            if fb is None:
                return 0, f"{why}: unclassified"
            return fb.cls, f"{why}, taken as {fb.name} -> {fb.title}"
        return cat.cls, f"{cat.name} ({why}) -> {cat.title}"


@dataclass(frozen=True)
class SizeBucket:
    #: Largest size in the bucket; None for the last, open-ended one.
    max_size: int | None
    cls: int


@dataclass(frozen=True)
class SizeScheme:
    name: str
    description: str
    buckets: tuple[SizeBucket, ...]

    def explain(self, name: str, size: int | None) -> tuple[int, str]:
        if size is None:
            raise ValueError(
                f"scheme {self.name!r} classifies by size: the size of {name} is needed"
            )
        prev: int | None = None
        for b in self.buckets:
            if b.max_size is None or size <= b.max_size:
                if b.max_size is not None:
                    return b.cls, f"size {format_size(size)} <= {format_size(b.max_size)}"
                return b.cls, f"size {format_size(size)} > {format_size(prev or 0)}"
            prev = b.max_size
        return 0, f"size {format_size(size)} above every bucket: unclassified"


class Classifier:
    """One classification scheme of a policy file."""

    def __init__(self, scheme: Scheme, source: Path | None = None) -> None:
        self.scheme = scheme
        self.source = source

    @classmethod
    def load(
        cls,
        name_or_path: str | Path = DEFAULT_POLICY,
        scheme: str | None = None,
        *,
        large_object_threshold: int | str | None = None,
    ) -> Classifier:
        """Load ``scheme`` (default: the file's ``default_scheme``) of a policy file.

        ``name_or_path`` is a shipped policy's name or a file path. ``large_object_threshold``
        overrides the file's threshold for a type scheme.
        """
        path = policy_path(name_or_path)
        return cls(_build_scheme(_read(path), scheme, path, large_object_threshold), path)

    @staticmethod
    def schemes(name_or_path: str | Path = DEFAULT_POLICY) -> dict[str, str]:
        """Scheme names of a policy file and their descriptions."""
        path = policy_path(name_or_path)
        return {
            name: _text(body, "description", f"{path}: schemes.{name}")
            for name, body in _schemes(_read(path), str(path)).items()
        }

    def explain(
        self, path_or_name: str | os.PathLike[str], size: int | None = None
    ) -> tuple[int, str]:
        """The class for a file and why. Without ``size``, an existing file's size is used."""
        name = os.fspath(path_or_name)
        if size is None and os.path.isfile(name):
            size = os.path.getsize(name)
        return self.scheme.explain(name, size)

    def classify(self, path_or_name: str | os.PathLike[str], size: int | None = None) -> int:
        return self.explain(path_or_name, size)[0]


def _read(path: Path) -> Mapping[str, Any]:
    try:
        return load_policy(path)
    except ValueError as e:  # not TOML, or not text at all; the message names the file
        raise ClassifierConfigError(str(e)) from None


def _schemes(data: Mapping[str, Any], where: str) -> Mapping[str, Mapping[str, Any]]:
    schemes = data.get("schemes")
    if schemes is None or (isinstance(schemes, Mapping) and not schemes):
        raise ClassifierConfigError(f"{where}: no [schemes.*] tables")
    if not isinstance(schemes, Mapping):
        raise ClassifierConfigError(f"{where}: schemes must be a table of schemes, not {schemes!r}")
    for name, body in schemes.items():
        if not isinstance(body, Mapping):
            raise ClassifierConfigError(f"{where}: schemes.{name} must be a table, not {body!r}")
    return schemes


def _build_scheme(
    data: Mapping[str, Any],
    name: str | None,
    path: Path,
    threshold_override: int | str | None,
) -> Scheme:
    schemes = _schemes(data, str(path))
    default = data.get("default_scheme")
    if default is not None and (not isinstance(default, str) or not default):
        raise ClassifierConfigError(
            f"{path}: default_scheme must be a scheme name, not {default!r}"
        )
    if name is None:
        name = default or next(iter(schemes))
    body = schemes.get(name)
    if body is None:
        raise ClassifierConfigError(f"{path}: no scheme {name!r} (schemes: {', '.join(schemes)})")
    where = f"{path}: schemes.{name}"
    try:
        kind = body.get("kind")
        if kind == "type":
            return _type_scheme(name, body, where, threshold_override)
        if kind == "size":
            return _size_scheme(name, body, where)
        raise ClassifierConfigError(f"{where}: kind {kind!r} is not 'type' or 'size'")
    except (ClassError, ValueError, TypeError, KeyError) as e:
        if isinstance(e, ClassifierConfigError):
            raise
        raise ClassifierConfigError(f"{where}: {e}") from None


def _class(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ClassifierConfigError(f"{what} {value!r} is not an integer")
    try:
        return check_class(value)
    except ClassError as e:
        raise ClassifierConfigError(f"{what}: {e}") from None


def _strings(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ClassifierConfigError(f"{what} must be a list of strings")
    return value


def _text(table: Mapping[str, Any], key: str, where: str) -> str:
    value = table.get(key, "")
    if not isinstance(value, str):
        raise ClassifierConfigError(f"{where}.{key} must be a string, not {value!r}")
    return value


def _size(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ClassifierConfigError(f'{what} must be a byte count or a size such as "10MiB"')
    try:
        return parse_size(value)
    except ValueError as e:
        raise ClassifierConfigError(f"{what}: {e}") from None


def _type_scheme(
    name: str, body: Mapping[str, Any], where: str, threshold_override: int | str | None
) -> TypeScheme:
    cats = body.get("categories")
    if cats is None or (isinstance(cats, Mapping) and not cats):
        raise ClassifierConfigError(f"{where}: no categories")
    if not isinstance(cats, Mapping):
        raise ClassifierConfigError(
            f"{where}.categories must be a table of categories, not {cats!r}"
        )
    categories: list[Category] = []
    owner: dict[str, str] = {}
    for cname, c in cats.items():
        cw = f"{where}.categories.{cname}"
        if not isinstance(c, Mapping):
            raise ClassifierConfigError(f"{cw} must be a table, not {c!r}")
        exts = {
            e.lower().lstrip(".") for e in _strings(c.get("extensions", []), f"{cw}.extensions")
        }
        for ext in exts:
            if ext in owner:
                raise ClassifierConfigError(f"{cw}: extension .{ext} is also in {owner[ext]}")
            owner[ext] = cname
        categories.append(
            Category(
                name=cname,
                cls=_class(c.get("class"), f"{cw}.class"),
                label=_text(c, "label", cw),
                extensions=frozenset(exts),
                mime_types=frozenset(_strings(c.get("mime_types", []), f"{cw}.mime_types")),
                mime_prefixes=tuple(_strings(c.get("mime_prefixes", []), f"{cw}.mime_prefixes")),
            )
        )
    by_name = {c.name: c for c in categories}
    fallback_name = body.get("fallback")
    if fallback_name is not None and (
        not isinstance(fallback_name, str) or fallback_name not in by_name
    ):
        raise ClassifierConfigError(f"{where}: fallback {fallback_name!r} is not a category")
    threshold = (
        body.get("large_object_threshold") if threshold_override is None else threshold_override
    )
    return TypeScheme(
        name=name,
        description=_text(body, "description", where),
        categories=tuple(categories),
        fallback=by_name.get(fallback_name) if fallback_name else None,
        large_object_threshold=None
        if threshold is None
        else _size(threshold, f"{where}.large_object_threshold"),
        large_object_class=_class(body.get("large_object_class", 0), f"{where}.large_object_class"),
        large_object_label=_text(body, "large_object_label", where),
    )


def _size_scheme(name: str, body: Mapping[str, Any], where: str) -> SizeScheme:
    raw = body.get("buckets")
    if not isinstance(raw, list) or not raw:
        raise ClassifierConfigError(f"{where}: no buckets")
    buckets: list[SizeBucket] = []
    for i, b in enumerate(raw):
        bw = f"{where}.buckets[{i}]"
        if not isinstance(b, Mapping):
            raise ClassifierConfigError(f"{bw} is not a table")
        max_size = None if b.get("max") is None else _size(b["max"], f"{bw}.max")
        if buckets and (
            buckets[-1].max_size is None
            or (max_size is not None and max_size <= buckets[-1].max_size)
        ):
            raise ClassifierConfigError(f"{bw}: buckets must grow, only the last may lack max")
        buckets.append(SizeBucket(max_size, _class(b.get("class"), f"{bw}.class")))
    return SizeScheme(name, _text(body, "description", where), tuple(buckets))
