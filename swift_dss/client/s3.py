"""Classes on boto3 S3 calls, through botocore event hooks.

Every call that writes object data or makes an object (PutObject, the multipart calls,
CopyObject, UploadPartCopy) gets the classes that ``classes_for`` chooses, either as the
X-DSS-* headers or, for stores that pass only user metadata through, as
``x-amz-meta-dss-object-class`` / ``x-amz-meta-dss-range-class``. The headers are added
before the request is built, so SigV4 signs them like any other header.

A call that names a ``StorageClass`` is left alone: on a proxy with the
``s3_storage_class`` filter the storage class is the object's class (and its parts'), and
a class sent beside it would have to agree with it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import boto3
from botocore.config import Config

from swift_dss.client.classes import Classes, as_classmap, class_headers
from swift_dss.formats import OBJECT_CLASS, ClassMap

#: The S3 operations that carry classes.
OPERATIONS = (
    "PutObject",
    "CreateMultipartUpload",
    "UploadPart",
    "CompleteMultipartUpload",
    "CopyObject",
    "UploadPartCopy",
)
META_OBJECT_CLASS = "dss-object-class"
META_RANGE_CLASS = "dss-range-class"
_CONTEXT_KEY = "swift_dss_headers"

S3Via = Literal["headers", "metadata"]
ClassesFor = Callable[[str, Mapping[str, Any]], Classes]

_ids = itertools.count()


def _metadata(cmap: ClassMap) -> dict[str, str]:
    """The classes as user metadata (keys without the ``x-amz-meta-`` prefix)."""
    meta = {}
    for name, value in class_headers(cmap).items():
        meta[META_OBJECT_CLASS if name == OBJECT_CLASS else META_RANGE_CLASS] = value
    return meta


def _takes_metadata(operation: str, params: Mapping[str, Any], model: Any) -> bool:
    if "Metadata" not in model.input_shape.members:
        return False
    # A copy keeps the source's metadata unless told to replace it, and then ignores any
    # Metadata given: the classes must not silently vanish, nor replace the user's metadata.
    return operation != "CopyObject" or params.get("MetadataDirective") == "REPLACE"


@dataclass
class ClassHooks:
    """The hooks :func:`attach_classes` registered on one client."""

    client: Any
    classes_for: ClassesFor
    via: S3Via
    _unique: str = field(default_factory=lambda: f"swift-dss-classes-{next(_ids)}")

    def _events(self) -> list[tuple[str, Callable[..., None]]]:
        events = []
        for op in OPERATIONS:
            events.append((f"before-parameter-build.s3.{op}", self._choose))
            events.append((f"before-call.s3.{op}", self._add_headers))
        return events

    def attach(self) -> ClassHooks:
        for event, handler in self._events():
            self.client.meta.events.register(event, handler, unique_id=f"{self._unique}:{event}")
        return self

    def detach(self) -> None:
        for event, handler in self._events():
            self.client.meta.events.unregister(event, handler, unique_id=f"{self._unique}:{event}")

    def _choose(
        self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        context.pop(_CONTEXT_KEY, None)
        if params.get("StorageClass"):
            return
        cmap = as_classmap(self.classes_for(model.name, dict(params)))
        if cmap is None:
            return
        if self.via == "headers":
            context[_CONTEXT_KEY] = class_headers(cmap)
        elif _takes_metadata(model.name, params, model):
            params["Metadata"] = {**params.get("Metadata", {}), **_metadata(cmap)}
        else:
            context[_CONTEXT_KEY] = {f"x-amz-meta-{k}": v for k, v in _metadata(cmap).items()}

    def _add_headers(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        # ``params`` here is the request dict botocore is about to build, sign and send.
        headers = context.get(_CONTEXT_KEY)
        if headers:
            params["headers"].update(headers)


def attach_classes(
    s3_client: Any,
    classes_for: ClassesFor | ClassMap | int,
    via: S3Via = "headers",
) -> ClassHooks:
    """Make every class-carrying call of ``s3_client`` send classes.

    ``classes_for(operation_name, params)`` returns a ClassMap, a class or None (send nothing)
    for each call; a fixed ClassMap or class goes on every call. A multipart upload asks once
    per call, so each part and the completion carry classes too; range classes are sent as
    given, so choose them per call (``params["PartNumber"]``) when parts need their own.
    Calls with a ``StorageClass`` are skipped: the storage class decides their class.
    Returns the hooks, whose ``detach()`` removes them.
    """
    if via not in ("headers", "metadata"):
        raise ValueError(f"via must be 'headers' or 'metadata', not {via!r}")
    if callable(classes_for):
        chooser = classes_for
    else:
        fixed = as_classmap(classes_for)

        def chooser(operation: str, params: Mapping[str, Any]) -> Classes:
            return fixed

    return ClassHooks(s3_client, chooser, via).attach()


def s3_config(**overrides: Any) -> Config:
    """Path-style SigV4 in us-east-1, checksums only where S3 requires them.

    Swift's s3api answers path-style requests for any bucket name, and not every version of
    it takes the aws-chunked checksum trailers that recent botocore sends by default.
    """
    settings: dict[str, Any] = {
        "signature_version": "s3v4",
        "region_name": "us-east-1",
        "s3": {"addressing_style": "path"},
        "request_checksum_calculation": "when_required",
        "response_checksum_validation": "when_required",
    }
    settings.update(overrides)
    return Config(**settings)


def dss_s3_client(
    endpoint_url: str,
    access_key: str,
    secret_key: str,
    default_class: ClassesFor | ClassMap | int | None = None,
    *,
    via: S3Via = "headers",
    config: Config | None = None,
) -> Any:
    """A boto3 S3 client for a swift-dss proxy; with ``default_class``, hooks attached.

    Without a default class, :func:`attach_classes` can add hooks later.
    """
    client = boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint_url,
        aws_access_key_id=access_key,
        aws_secret_access_key=secret_key,
        region_name="us-east-1",
        config=config or s3_config(),
    )
    if default_class is not None:
        attach_classes(client, default_class, via)
    return client
