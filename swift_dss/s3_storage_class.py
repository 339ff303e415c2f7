"""
S3 storage classes as dss classes.

S3 clients name a storage class (``x-amz-storage-class``: ``put_object(StorageClass=...)``,
``create_multipart_upload(StorageClass=...)``, ``aws s3 cp --storage-class``); s3api accepts
only ``STANDARD``. This middleware maps the storage classes an operator lists to dss classes:

- a PUT (object, copy, part) or an initiated multipart upload with a listed storage class is
  stored with its class, which the ``dss`` middleware authorises as any other class;
- every part of an upload whose class is a listed storage class's gets that class, and so
  does the completed object (s3api carries the upload's classes over to it);
- HEAD and GET answer ``x-amz-storage-class`` with the storage class the object's class
  maps back to (nothing for ``STANDARD``, as S3 does), and ListObjects / ListObjectsV2
  report ``StorageClass`` per key (a HEAD per listed key, authorised as the caller: keys
  the caller may list but not read show ``STANDARD``);
- a storage class not listed is refused by s3api as before (``InvalidStorageClass``), and
  a request without one is left alone.

A storage class and an object class given in dss form (``X-DSS-Object-Class`` or
``x-amz-meta-dss-object-class``) must agree, else 400 (``InvalidArgument``); range classes
combine with it. A copy with a storage class gets its class, the source keeps its own.
``STANDARD`` means unclassified unless the table lists it. The table must be one-to-one,
so that a class names one storage class back; a bad table stops the proxy at start-up with
the reason.

The filter appears twice in the pipeline, as ``proxy-logging`` does: before ``s3api``,
where it translates storage class names for S3 requests, and after the auth middleware and
``copy``, where it sees the requests s3api makes (``swift.source`` ``S3``, and ``SSC`` for
the PUT of a copy) and gives them their classes. After ``copy``, so that a copy's source
GET does not carry the class (the dss middleware would take it as a reclassification)::

    [pipeline:main]
    pipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats
        bulk tempurl ratelimit s3_storage_class s3api tempauth copy s3_storage_class
        container-quotas account-quotas slo dlo versioned_writes symlink dss
        proxy-logging proxy-server

It relies on three things s3api does (tests/integration/test_s3_storage_class.py checks
each): it builds the string to sign from the raw request headers (``headers_raw``, which
eventlet provides), so taking ``x-amz-storage-class`` out of the environ leaves SigV4 and
V2 signatures as the client made them; it copies the S3 request's environ into each request
it makes, so both instances share one object in it; and it stores part N of an upload as
``<upload marker>/N`` and carries the marker's ``x-amz-meta-*`` over to the completed object.

    [filter:s3_storage_class]
    use = egg:swift_dss#s3_storage_class
    # storage_class_<NAME> = <dss class 1-255>, one line per storage class.
    # storage_class_STANDARD_IA = 30
    # storage_class_GLACIER = 31
    # ListObjects looks up each listed key's class, a HEAD per key (on the all-in-one a
    # listing of 200 keys took 8 times as long); false lists every key as STANDARD.
    # list_storage_classes = true
    # HEADs in flight at once while a listing's storage classes are looked up.
    # listing_concurrency = 10

The table is advertised in ``/info`` under ``s3_storage_class``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qs, unquote

from eventlet import GreenPool
from lxml import etree
from swift.common.http import is_success
from swift.common.middleware.s3api.s3response import InvalidArgument
from swift.common.registry import register_swift_info
from swift.common.swob import HTTPException, Request, str_to_wsgi, wsgi_quote
from swift.common.utils import config_true_value, get_logger
from swift.common.wsgi import WSGIContext, make_subrequest

from swift_dss.formats import OBJECT_CLASS, OBJECT_FILE
from swift_dss.formats.headers import ENV_META_RANGE_CLASS, ENV_OBJECT_CLASS, ENV_RANGE_CLASS
from swift_dss.formats.sysmeta import environ_key

OPTION_PREFIX = "storage_class_"
STANDARD = "STANDARD"
STORAGE_CLASS = "x-amz-storage-class"
#: The class of an object as s3api returns it to S3 clients (the dss middleware's doing).
S3_OBJECT_CLASS = "x-amz-meta-dss-object-class"
#: The swift.source of the requests s3api makes, and of the PUT of a copy.
S3_SOURCES = ("S3", "SSC")
SWIFT_SOURCE = "S3SC"
#: What the front instance leaves for the one after auth (s3api copies the environ into
#: each request it makes, so both see one _Exchange).
ENV_EXCHANGE = "swift_dss.s3_storage_class"
ENV_STORAGE_CLASS = environ_key(STORAGE_CLASS)
#: The object class in dss form, as an S3 client sends it.
_CLIENT_OBJECT_CLASS = {
    OBJECT_CLASS: ENV_OBJECT_CLASS,
    "x-amz-meta-dss-object-class": environ_key("x-amz-meta-dss-object-class"),
}
#: Every way an S3 client classifies a request in dss form.
_CLIENT_CLASS_HEADERS = (
    *_CLIENT_OBJECT_CLASS.values(),
    ENV_RANGE_CLASS,
    environ_key("x-amz-meta-dss-range-class"),
    environ_key(OBJECT_FILE),
)
#: The query parameters of ListObjects and ListObjectsV2; a GET with any other is another
#: API (ListParts, ListObjectVersions, ?acl, ...) whose listings are left alone.
LISTING_PARAMS = frozenset(
    {
        "list-type",
        "prefix",
        "delimiter",
        "marker",
        "max-keys",
        "encoding-type",
        "continuation-token",
        "fetch-owner",
        "start-after",
    }
)
_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
DEFAULT_LISTING_CONCURRENCY = 10


class StorageClassConfigError(ValueError):
    """The filter's configuration cannot be used; the message says which option and why."""


@dataclass(frozen=True)
class StorageClassTable:
    """The operator's storage class -> dss class table, one-to-one."""

    classes: Mapping[str, int]

    @classmethod
    def from_conf(cls, conf: Mapping[str, str]) -> StorageClassTable:
        table: dict[str, int] = {}
        names: dict[int, str] = {}
        for key, value in conf.items():
            if not key.startswith(OPTION_PREFIX):
                continue
            name = key[len(OPTION_PREFIX) :]
            if not _NAME.fullmatch(name):
                raise StorageClassConfigError(
                    f"{key}: a storage class is written as S3 spells it, in capitals, "
                    f"digits and '_' (STANDARD_IA), not {name!r}"
                )
            try:
                dss_class = int(value)
            except ValueError:
                raise StorageClassConfigError(
                    f"{key} = {value}: the dss class must be a number, 1-255"
                ) from None
            if not 1 <= dss_class <= 255:
                raise StorageClassConfigError(
                    f"{key} = {value}: the dss class must be 1-255 (0 is unclassified, "
                    f"what {STANDARD} stands for unless listed)"
                )
            if dss_class in names:
                raise StorageClassConfigError(
                    f"{key} = {value}: class {dss_class} is already storage class "
                    f"{names[dss_class]}; each class may name one storage class"
                )
            table[name] = dss_class
            names[dss_class] = name
        return cls(table)

    def class_of(self, name: str) -> int | None:
        return self.classes.get(name)

    def reported(self, dss_class: int | None) -> str | None:
        """The storage class an object of DSS_CLASS is in, None for STANDARD (as S3 says it)."""
        for name, value in self.classes.items():
            if value == dss_class:
                return None if name == STANDARD else name
        return None


@dataclass
class _Exchange:
    """One client request's storage class business, shared by both instances."""

    dss_class: int | None = None
    upload: tuple[str, str] | None = None  # (upload id, part number) of an UploadPart
    listing: bool = False
    url_keys: bool = False  # ListObjects with encoding-type=url: keys are URL-encoded
    listed: dict[str, int] = field(default_factory=dict)
    client_classes: bool = False  # the client classified the request in dss form itself
    applied: bool = False


def _is_s3(env: Mapping[str, object], params: Mapping[str, object]) -> bool:
    """Whether s3api will take the request as an S3 one (header or query authentication)."""
    auth = str(env.get("HTTP_AUTHORIZATION") or "")
    return auth.startswith(("AWS ", "AWS4-HMAC-SHA256")) or any(
        k in params for k in ("AWSAccessKeyId", "X-Amz-Credential")
    )


def _class_value(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


class S3StorageClassMiddleware:
    def __init__(self, app: object, conf: Mapping[str, str], logger: object = None) -> None:
        self.app = app
        self.logger = logger or get_logger(dict(conf), log_route="s3_storage_class")
        self.table = StorageClassTable.from_conf(conf)
        self.concurrency = _positive_int(conf, "listing_concurrency", DEFAULT_LISTING_CONCURRENCY)
        self.list_storage_classes = config_true_value(conf.get("list_storage_classes", "true"))

    def __call__(self, env: dict, start_response: object) -> Iterable[bytes]:
        exchange = env.get(ENV_EXCHANGE)
        if exchange is not None:
            if env.get("swift.source") in S3_SOURCES:
                return self._swift_side(env, exchange, start_response)
            return self.app(env, start_response)
        if env.get("swift.source") is not None:
            return self.app(env, start_response)  # some other middleware's subrequest
        params = parse_qs(env.get("QUERY_STRING", ""), keep_blank_values=True)
        if not _is_s3(env, params):
            return self.app(env, start_response)
        try:
            return self._front(env, params, start_response)
        except HTTPException as err_resp:
            return err_resp(env, start_response)

    # -- before s3api: storage class names -----------------------------------------------

    def _front(
        self, env: dict, params: Mapping[str, list[str]], start_response: object
    ) -> Iterable[bytes]:
        exchange = env[ENV_EXCHANGE] = _Exchange()
        method = env["REQUEST_METHOD"]
        exchange.client_classes = any(k in env for k in _CLIENT_CLASS_HEADERS)
        name = env.get(ENV_STORAGE_CLASS)
        if name is not None and method in ("PUT", "POST"):
            exchange.dss_class = self.table.class_of(name)
            if exchange.dss_class is not None:
                self._check_agrees(env, name, exchange.dss_class)
                # s3api would refuse it; the class carries it on. Only the environ changes:
                # the string to sign is built from the raw headers.
                del env[ENV_STORAGE_CLASS]
        if method == "PUT" and "uploadId" in params and "partNumber" in params:
            exchange.upload = (params["uploadId"][0], params["partNumber"][0])
        elif method == "GET" and self.list_storage_classes and set(params) <= LISTING_PARAMS:
            exchange.listing = True
            exchange.url_keys = params.get("encoding-type") == ["url"]
        if method not in ("GET", "HEAD") and exchange.dss_class is None:
            return self.app(env, start_response)
        ctx = WSGIContext(self.app)
        app_iter = ctx._app_call(env)
        if is_success(ctx._get_status_int()):
            if exchange.dss_class is not None and not exchange.applied:
                self.logger.error(
                    "storage class %s was taken but never reached the object: "
                    "s3_storage_class must also sit after the auth middleware and copy",
                    name,
                )
            app_iter = self._report(ctx, exchange, app_iter)
        start_response(ctx._response_status, ctx._response_headers, ctx._response_exc_info)
        return app_iter

    @staticmethod
    def _check_agrees(env: Mapping[str, str], name: str, dss_class: int) -> None:
        for header, key in _CLIENT_OBJECT_CLASS.items():
            given = env.get(key)
            if given is not None and _class_value(given) != dss_class:
                raise InvalidArgument(
                    STORAGE_CLASS,
                    name,
                    f"storage class {name} is dss class {dss_class} but {header} is "
                    f"{given!r}; send one",
                )

    def _report(
        self, ctx: WSGIContext, exchange: _Exchange, app_iter: Iterable[bytes]
    ) -> Iterable[bytes]:
        for key, value in ctx._response_headers:
            if key.lower() == S3_OBJECT_CLASS:
                name = self.table.reported(_class_value(value))
                if name is not None:
                    ctx._response_headers.append((STORAGE_CLASS, name))
                return app_iter
        if not any(self.table.reported(c) for c in exchange.listed.values()):
            return app_iter
        body = b"".join(app_iter)
        rewritten = self._list_storage_classes(body, exchange)
        if rewritten is None:
            return [body]
        ctx._response_headers = [
            (k, str(len(rewritten)) if k.lower() == "content-length" else v)
            for k, v in ctx._response_headers
        ]
        return [rewritten]

    def _list_storage_classes(self, body: bytes, exchange: _Exchange) -> bytes | None:
        """A ListBucketResult with each key's StorageClass, None if BODY is not one."""
        try:
            parser = etree.XMLParser(resolve_entities=False, no_network=True)
            root = etree.fromstring(body, parser)
        except etree.XMLSyntaxError:
            return None
        if etree.QName(root).localname != "ListBucketResult":
            return None
        ns = etree.QName(root).namespace
        tag = (lambda local: f"{{{ns}}}{local}") if ns else (lambda local: local)
        for contents in root.iterfind(tag("Contents")):
            key = contents.findtext(tag("Key"))
            element = contents.find(tag("StorageClass"))
            if key is None or element is None:
                continue
            if exchange.url_keys:
                key = unquote(key)
            name = self.table.reported(exchange.listed.get(key))
            if name is not None:
                element.text = name
        return etree.tostring(root, xml_declaration=True, encoding="UTF-8")

    # -- after auth: the requests s3api makes --------------------------------------------

    def _swift_side(
        self, env: dict, exchange: _Exchange, start_response: object
    ) -> Iterable[bytes]:
        req = Request(env)
        try:
            _version, _account, container, obj = req.split_path(3, 4, rest_with_last=True)
        except ValueError:
            return self.app(env, start_response)
        if req.method == "PUT" and obj:
            if exchange.dss_class is not None:
                self._classify(req.environ, exchange.dss_class)
                exchange.applied = True
            elif exchange.upload is not None and not exchange.client_classes:
                self._inherit(req, *exchange.upload)
        elif req.method == "GET" and container and not obj and exchange.listing:
            return self._look_up_listing(req, exchange, start_response)
        return self.app(env, start_response)

    @staticmethod
    def _classify(env: dict, dss_class: int) -> None:
        # Over whatever a copy brought from its source: the storage class names the class.
        env[ENV_OBJECT_CLASS] = str(dss_class)
        # The dss middleware reads the X-DSS form alone when there is one, so range classes
        # the client gave as metadata move to it.
        meta_range = env.get(ENV_META_RANGE_CLASS)
        if meta_range is not None and ENV_RANGE_CLASS not in env:
            env[ENV_RANGE_CLASS] = meta_range

    def _inherit(self, req: Request, upload_id: str, part: str) -> None:
        """A part of an upload in a listed storage class gets the upload's class."""
        env = req.environ
        try:
            # s3api stores part N of an upload as <upload marker>/N.
            suffix = f"/{int(part)}"
        except ValueError:
            return
        path = env["PATH_INFO"]
        marker = path[: -len(suffix)]
        if not path.endswith(suffix) or not marker.endswith(f"/{upload_id}"):
            return
        head = make_subrequest(
            env, method="HEAD", path=wsgi_quote(marker) + "?", headers={}, swift_source=SWIFT_SOURCE
        ).get_response(self.app)
        dss_class = _class_value(head.headers.get(OBJECT_CLASS)) if head.is_success else None
        if dss_class in self.table.classes.values():
            env[ENV_OBJECT_CLASS] = str(dss_class)

    def _look_up_listing(
        self, req: Request, exchange: _Exchange, start_response: object
    ) -> Iterable[bytes]:
        ctx = WSGIContext(self.app)
        app_iter = ctx._app_call(req.environ)
        content_type = dict((k.lower(), v) for k, v in ctx._response_headers).get(
            "content-type", ""
        )
        if ctx._get_status_int() == 200 and content_type.startswith("application/json"):
            body = b"".join(app_iter)
            app_iter = [body]
            try:
                listing = json.loads(body)
                names = [item["name"] for item in listing if "name" in item]
            except (ValueError, TypeError, KeyError):
                names = []
            exchange.listed.update(self._classes_of(req, names))
        start_response(ctx._response_status, ctx._response_headers, ctx._response_exc_info)
        return app_iter

    def _classes_of(self, req: Request, names: list[str]) -> dict[str, int]:
        """The listed objects' classes, by HEADs authorised as the caller."""
        container_path = req.environ["PATH_INFO"].rstrip("/")

        def head(name: str) -> tuple[str, int | None]:
            path = wsgi_quote(f"{container_path}/{str_to_wsgi(name)}") + "?"
            try:
                resp = make_subrequest(
                    req.environ, method="HEAD", path=path, headers={}, swift_source=SWIFT_SOURCE
                ).get_response(self.app)
            except Exception:
                # One key's storage class is not worth the listing: it shows STANDARD.
                self.logger.exception("looking up the class of %s", path)
                return name, None
            return name, _class_value(resp.headers.get(OBJECT_CLASS)) if resp.is_success else None

        pool = GreenPool(self.concurrency)
        return {name: cls for name, cls in pool.imap(head, names) if cls}


def _positive_int(conf: Mapping[str, str], key: str, default: int) -> int:
    value = conf.get(key, default)
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise StorageClassConfigError(f"{key} = {value}: must be a whole number of 1 or more")
    return number


def filter_factory(global_conf: Mapping[str, str], **local_conf: str) -> object:
    conf = dict(global_conf)
    conf.update(local_conf)
    table = StorageClassTable.from_conf(conf)
    _positive_int(conf, "listing_concurrency", DEFAULT_LISTING_CONCURRENCY)
    register_swift_info("s3_storage_class", storage_classes=dict(table.classes))

    def storage_class_filter(app: object) -> S3StorageClassMiddleware:
        return S3StorageClassMiddleware(app, conf)

    return storage_class_filter
