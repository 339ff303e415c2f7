"""
Client-aware data classes for Swift objects.

The ``dss`` middleware lets clients label object data with classes (integers 0-255) that the
storage below Swift treats differently. It validates and authorises the classes a client
sends, turns them into object transient sysmeta that the ``egg:swift_dss#object`` server
hands to the storage tier with every chunk, and reports them back on HEAD and GET.

Clients classify in band, with the data of a PUT:

- ``X-DSS-Object-Class: <class>``: one class for the whole object;
- ``X-DSS-Range-Class: <offset>-<length>-<class>[,...]``: classes for ranges of 512-byte
  sectors (bytes outside every range get the object class, else 0);
- ``X-DSS-Object-File: True``: the body is a binary class file followed by the object
  data; the class sections are taken off the stream (never buffering the data), so the
  stored object, its length and ETag are the data's alone.

and out of band, for an existing object:

- ``POST`` or ``GET`` with ``X-DSS-Object-Class`` / ``X-DSS-Range-Class``;
- ``PUT`` with ``X-DSS-Class-File: True`` and a class file as the body.

A reclassification changes classes only: the data, ETag, content type and user metadata stay
as they were. Classes survive every other operation too: a POST of user metadata (the
middleware re-sends the stored classes with it), COPY and versioning (their subrequests
carry the sysmeta). S3 clients reach all of this through s3api with the same headers, or
with ``x-amz-meta-dss-object-class`` / ``x-amz-meta-dss-range-class`` user metadata, which
the middleware takes as classes and reports back in the same form.

Malformed class information is answered with 400, class information beyond the configured
limits with 413, and a class the client may not set with 403, each with a one-line reason.

Place the middleware after authentication and after ``copy``, ``slo``, ``dlo``,
``versioned_writes`` and ``symlink``, so that their subrequests pass through it::

    [pipeline:main]
    pipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats
        bulk tempurl ratelimit s3api tempauth copy container-quotas account-quotas slo dlo
        versioned_writes symlink dss proxy-logging proxy-server

    [filter:dss]
    use = egg:swift_dss#dss
    # Classes any client may set (class 0, "unclassified", always may be set).
    # allowed_classes = 0-255
    # Classes the storage system keeps for itself (file-system metadata in the reference
    # scheme). Nobody may set them, whatever the other options say.
    # reserved_classes = 1-10
    # Per account, replacing allowed_classes for that account:
    # account_allowed_classes_AUTH_test = 0,11-31
    # Per role (a keystone role or a tempauth group), added to what the account allows:
    # role_allowed_classes_.admin = 0-255
    # Limits on class information.
    # max_class = 255
    # max_ranges = 1024
    # max_class_section = 65536
    # max_header_length = 8000
    # Headers a reclassification re-sends so that a POST does not drop them.
    # preserve_headers = content-disposition, content-encoding, x-delete-at,
    #     x-object-manifest, cache-control, content-language, expires, x-robots-tag

The feature is advertised in ``/info`` under ``dss``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from swift.common.constraints import valid_api_version
from swift.common.http import is_success
from swift.common.registry import register_swift_info
from swift.common.request_helpers import get_sys_meta_prefix
from swift.common.swob import (
    HTTPAccepted,
    HTTPBadRequest,
    HTTPException,
    HTTPForbidden,
    HTTPRequestEntityTooLarge,
    Request,
    Response,
    wsgi_to_str,
)
from swift.common.utils import config_true_value, get_logger, list_from_csv
from swift.common.wsgi import WSGIContext, make_subrequest

from swift_dss.formats import (
    CLASS_FILE,
    OBJECT_CLASS,
    OBJECT_FILE,
    RANGE_CLASS,
    ClassError,
    ClassLimitError,
    ClassMap,
    Limits,
    classmap_from_headers,
    classmap_to_headers,
    from_sysmeta,
    read_classfile,
    to_sysmeta,
)
from swift_dss.formats.sysmeta import ENVIRON_PREFIX, PREFIX, environ_key
from swift_dss.settable_classes import SettableClasses, format_class_set

#: Class headers in the user-metadata form, for S3 clients that can only set metadata.
META_OBJECT_CLASS = "X-Object-Meta-Dss-Object-Class"
META_RANGE_CLASS = "X-Object-Meta-Dss-Range-Class"
SWIFT_SOURCE = "DSS"
#: The copy middleware's source GETs: their classes travel as sysmeta, not as client headers.
COPY_SOURCE = "SSC"
S3_SOURCE = "S3"
DEFAULT_PRESERVE_HEADERS = (
    "content-disposition, content-encoding, x-delete-at, x-object-manifest, "
    "cache-control, content-language, expires, x-robots-tag"
)
SLO_SIZE = get_sys_meta_prefix("object") + "slo-size"
# The request headers every object request is checked for, as environ keys: reading the
# environ directly spares swob's header proxy its conversions on each lookup.
ENV_OBJECT_CLASS = environ_key(OBJECT_CLASS)
ENV_RANGE_CLASS = environ_key(RANGE_CLASS)
ENV_META_OBJECT_CLASS = environ_key(META_OBJECT_CLASS)
ENV_META_RANGE_CLASS = environ_key(META_RANGE_CLASS)
ENV_OBJECT_FILE = environ_key(OBJECT_FILE)
ENV_CLASS_FILE = environ_key(CLASS_FILE)
ENV_SLO_SIZE = environ_key(SLO_SIZE)
_LOWER_SYSMETA_PREFIX = PREFIX.lower()
_ENV_CLASS_HEADERS = (
    ENV_OBJECT_CLASS,
    ENV_RANGE_CLASS,
    ENV_META_OBJECT_CLASS,
    ENV_META_RANGE_CLASS,
)


def _roles(env: Mapping[str, object]) -> set[str]:
    # tempauth puts the user's groups in REMOTE_USER; keystone's auth_token sets X-Roles.
    roles = set(list_from_csv(str(env.get("REMOTE_USER") or "")))
    roles.update(list_from_csv(str(env.get("HTTP_X_ROLES") or "")))
    return roles


class _ClassedResponse(WSGIContext):
    """Adds the object's current classes to a HEAD or GET response."""

    def __init__(self, app: object, limits: Limits, logger: object) -> None:
        super().__init__(app)
        self.limits = limits
        self.logger = logger

    def handle(self, env: dict, start_response: object) -> Iterable[bytes]:
        app_iter = self._app_call(env)
        if is_success(self._get_status_int()) and env.get("swift.source") != COPY_SOURCE:
            # Only the dss sysmeta, with its keys in the title case from_sysmeta looks for.
            sysmeta = {
                k.title(): v
                for k, v in self._response_headers
                if k.lower().startswith(_LOWER_SYSMETA_PREFIX)
            }
            try:
                cmap = (from_sysmeta(sysmeta, self.limits) if sysmeta else None) or ClassMap()
            except ClassError as err:
                self.logger.warning(
                    "object %s has corrupt class sysmeta: %s", env["PATH_INFO"], err
                )
                cmap = ClassMap()
            extra = classmap_to_headers(cmap)
            if env.get("swift.source") == S3_SOURCE:
                # s3api only passes user metadata on to S3 clients.
                extra[META_OBJECT_CLASS] = extra[OBJECT_CLASS]
                if RANGE_CLASS in extra:
                    extra[META_RANGE_CLASS] = extra[RANGE_CLASS]
            names = {k.lower() for k in extra}
            self._response_headers = [
                (k, v) for k, v in self._response_headers if k.lower() not in names
            ] + list(extra.items())
        start_response(self._response_status, self._response_headers, self._response_exc_info)
        return app_iter


class DssMiddleware:
    def __init__(self, app: object, conf: Mapping[str, str], logger: object = None) -> None:
        self.app = app
        self.conf = conf
        self.logger = logger or get_logger(dict(conf), log_route="dss")
        self.limits = Limits.from_conf(conf)
        self.settable = SettableClasses(conf, self.limits)
        self.preserve_headers = [
            h.lower() for h in list_from_csv(conf.get("preserve_headers", DEFAULT_PRESERVE_HEADERS))
        ]

    def __call__(self, env: dict, start_response: object) -> Iterable[bytes]:
        req = Request(env)
        try:
            version, account, _container, _obj = req.split_path(4, 4, rest_with_last=True)
        except ValueError:
            return self.app(env, start_response)
        if not valid_api_version(version):
            return self.app(env, start_response)
        try:
            if req.method == "PUT":
                return self.handle_put(req, account, start_response)
            if req.method == "POST":
                return self.handle_post(req, account, start_response)
            if req.method in ("GET", "HEAD"):
                return self.handle_read(req, account, start_response)
        except HTTPException as err_resp:
            return err_resp(env, start_response)
        return self.app(env, start_response)

    # -- what the client asked for ------------------------------------------------------

    def _error(self, err: ClassError, req: Request) -> HTTPException:
        cls = HTTPRequestEntityTooLarge if err.http_status == 413 else HTTPBadRequest
        return cls(body=f"{err}\n", request=req, content_type="text/plain")

    def _header_classes(self, req: Request, size: int | None) -> ClassMap | None:
        """Classes from the X-DSS headers, or else from their user-metadata form."""
        env = req.environ
        obj, rng = env.get(ENV_OBJECT_CLASS), env.get(ENV_RANGE_CLASS)
        # The metadata form becomes classes: it must not also linger as user metadata.
        meta_obj = env.pop(ENV_META_OBJECT_CLASS, None)
        meta_rng = env.pop(ENV_META_RANGE_CLASS, None)
        try:
            meta = classmap_from_headers(meta_obj, meta_rng, self.limits, size)
            if obj is None and rng is None:
                return meta
            # The X-DSS headers win over the metadata form, which must still be well formed:
            # a malformed class is refused wherever it is written.
            return classmap_from_headers(obj, rng, self.limits, size)
        except ClassError as err:
            raise self._error(err, req) from None

    def _authorize(self, req: Request, account: str, cmap: ClassMap) -> None:
        account = wsgi_to_str(account)
        if self.settable.permits_without_roles(cmap.classes(), account):
            return
        refused = self.settable.refused(cmap, account, _roles(req.environ))
        if refused:
            raise HTTPForbidden(
                body=f"class {format_class_set(refused)} may not be set by this client\n",
                request=req,
                content_type="text/plain",
            )

    @staticmethod
    def _set_sysmeta(req: Request, cmap: ClassMap) -> None:
        env = req.environ
        for key in [k for k in env if k.startswith(ENVIRON_PREFIX)]:
            del env[key]
        for key, value in to_sysmeta(cmap).items():
            env[environ_key(key)] = value
        # The classes travel on as sysmeta. The client's own headers would only ride along
        # to every backend request, where each header costs Swift a little in every loop
        # over the headers.
        env.pop(ENV_OBJECT_CLASS, None)
        env.pop(ENV_RANGE_CLASS, None)

    # -- PUT ----------------------------------------------------------------------------

    def handle_put(self, req: Request, account: str, start_response: object) -> Iterable[bytes]:
        env = req.environ
        if config_true_value(env.get(ENV_CLASS_FILE)):
            return self.put_class_file(req, account, start_response)
        length = env.get("CONTENT_LENGTH")
        try:
            # As swob's req.content_length, without its trip through the header proxy.
            size = int(length) if length is not None else None
        except ValueError:
            raise HTTPBadRequest(
                body="Content-Length is not a number\n", request=req, content_type="text/plain"
            ) from None
        slo_size = env.get(ENV_SLO_SIZE)
        if slo_size is not None:
            # A large object's manifest: ranges refer to the object it stands for, whose
            # size slo has worked out, not to the manifest's own bytes.
            size = int(slo_size)
        if config_true_value(env.get(ENV_OBJECT_FILE)):
            cmap = self._strip_object_file(req, size)
        else:
            cmap = self._header_classes(req, size)
        if cmap is not None:
            self._authorize(req, account, cmap)
            self._set_sysmeta(req, cmap)
        # Without class information, sysmeta a COPY or versioning subrequest brought along
        # stays: the copy keeps the source's classes.
        return self.app(req.environ, start_response)

    def _strip_object_file(self, req: Request, size: int | None) -> ClassMap:
        """Take the class file off the front of the body; the rest streams on as data."""
        if req.headers.get(RANGE_CLASS) is not None:
            raise HTTPBadRequest(
                body=f"{RANGE_CLASS} and {OBJECT_FILE} both give ranges; send one\n",
                request=req,
                content_type="text/plain",
            )
        header_default = self._header_classes(req, None)
        stream = req.environ["wsgi.input"]
        try:
            cf = read_classfile(stream.read, self.limits)
            if size is not None:
                if size < cf.size:
                    raise ClassError("body is shorter than its class file")
                size -= cf.size
                cf.classmap.check_size(size)
        except ClassError as err:
            raise self._error(err, req) from None
        if size is not None:
            req.environ["CONTENT_LENGTH"] = str(size)
        cmap = cf.classmap
        if header_default is not None and not cf.classmap.default:
            cmap = cmap.with_default(header_default.default)
        req.headers.pop(OBJECT_FILE, None)
        return cmap

    def put_class_file(self, req: Request, account: str, start_response: object) -> Iterable[bytes]:
        """PUT with X-DSS-Class-File: reclassify the existing object from a class file."""
        limit = 16 + self.limits.max_class_section
        try:
            length = req.content_length
        except ValueError:
            length = None
        if length is not None and length > limit:
            raise self._error(
                ClassLimitError(f"class file of {length} bytes, limit is {limit}"),
                req,
            )
        stream = req.environ["wsgi.input"]
        try:
            cf = read_classfile(stream.read, self.limits)
        except ClassError as err:
            raise self._error(err, req) from None
        if stream.read(1):
            raise HTTPBadRequest(
                body=f"data after the class file: to upload data use {OBJECT_FILE}\n",
                request=req,
                content_type="text/plain",
            )
        cmap = cf.classmap
        header_default = self._header_classes(req, None)
        if header_default is not None and not cmap.default:
            cmap = cmap.with_default(header_default.default)
        self._authorize(req, account, cmap)
        resp = self.reclassify(req, cmap)
        return resp(req.environ, start_response)

    # -- POST and reclassification ------------------------------------------------------

    def handle_post(self, req: Request, account: str, start_response: object) -> Iterable[bytes]:
        env = req.environ
        has_classes = any(k in env for k in _ENV_CLASS_HEADERS)
        current = self._head(req)
        if not is_success(current.status_int):
            return current(req.environ, start_response)
        if has_classes:
            cmap = self._header_classes(req, self._object_size(current))
            assert cmap is not None
            self._authorize(req, account, cmap)
            user_meta = any(k.lower().startswith("x-object-meta-") for k in req.headers)
            if not user_meta:
                # A POST of classes alone changes classes alone.
                self._copy_preserved(current, req)
        else:
            cmap = self._stored_classes(current)
            if cmap is None:
                return self.app(req.environ, start_response)
        self._set_sysmeta(req, cmap)
        return self.app(req.environ, start_response)

    def handle_read(self, req: Request, account: str, start_response: object) -> Iterable[bytes]:
        env = req.environ
        if req.method == "GET" and (ENV_OBJECT_CLASS in env or ENV_RANGE_CLASS in env):
            current = self._head(req)
            if not is_success(current.status_int):
                return current(req.environ, start_response)
            cmap = self._header_classes(req, self._object_size(current))
            assert cmap is not None
            self._authorize(req, account, cmap)
            # Readers that send their classes with every GET must not pay for a POST each.
            if self._stored_classes(current) != cmap:
                resp = self.reclassify(req, cmap, current=current)
                if not is_success(resp.status_int):
                    return resp(req.environ, start_response)
            env.pop(ENV_OBJECT_CLASS, None)
            env.pop(ENV_RANGE_CLASS, None)
        return _ClassedResponse(self.app, self.limits, self.logger).handle(
            req.environ, start_response
        )

    def reclassify(
        self,
        req: Request,
        cmap: ClassMap,
        current: Response | None = None,
    ) -> Response:
        """Store ``cmap`` as the object's classes, changing nothing else about it."""
        if current is None:
            current = self._head(req)
            if not is_success(current.status_int):
                return current
        try:
            cmap.check_size(self._object_size(current) or 0)
        except ClassError as err:
            return self._error(err, req)
        post = make_subrequest(
            req.environ, method="POST", path=req.path, headers={}, swift_source=SWIFT_SOURCE
        )
        self._copy_preserved(current, post)
        self._set_sysmeta(post, cmap)
        resp = post.get_response(self.app)
        if not is_success(resp.status_int):
            return resp
        return HTTPAccepted(request=req, headers=classmap_to_headers(cmap))

    def _head(self, req: Request) -> Response:
        # The subrequest carries the client's swift.authorize: it may only see what the
        # client may see, and a reclassifying POST is authorised as a POST.
        head = make_subrequest(
            req.environ, method="HEAD", path=req.path, headers={}, swift_source=SWIFT_SOURCE
        )
        return head.get_response(self.app)

    def _copy_preserved(self, current: Response, target: Request) -> None:
        for key, value in current.headers.items():
            low = key.lower()
            if low.startswith("x-object-meta-") or low in self.preserve_headers:
                target.headers[key] = value

    @staticmethod
    def _object_size(current: Response) -> int | None:
        if current.headers.get("X-Object-Manifest"):
            return None
        slo_size = current.headers.get(SLO_SIZE)
        if slo_size is not None:
            return int(slo_size)
        return current.content_length

    def _stored_classes(self, current: Response) -> ClassMap | None:
        try:
            return from_sysmeta(current.headers, self.limits)
        except ClassError as err:
            self.logger.warning("object has corrupt class sysmeta: %s", err)
            return None


def filter_factory(global_conf: Mapping[str, str], **local_conf: str) -> object:
    conf = dict(global_conf)
    conf.update(local_conf)
    limits = Limits.from_conf(conf)
    settable = SettableClasses(conf, limits)
    register_swift_info(
        "dss",
        headers=[OBJECT_CLASS, RANGE_CLASS, OBJECT_FILE, CLASS_FILE],
        formats=["object", "range", "block"],
        sector_size=512,
        max_class=limits.max_class,
        max_ranges=limits.max_ranges,
        max_class_section=limits.max_class_section,
        max_header_length=limits.max_header_length,
        settable_classes=format_class_set(settable.allowed("", ())),
        reserved_classes=format_class_set(settable.reserved),
    )

    def dss_filter(app: object) -> DssMiddleware:
        return DssMiddleware(app, conf)

    return dss_filter
