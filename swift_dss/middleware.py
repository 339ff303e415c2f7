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
as they were, those of the upload it read (:mod:`swift_dss.class_post`). Classes survive
every other operation too: a POST of user metadata (the middleware re-sends the stored
classes with it), COPY and versioning (their subrequests carry the sysmeta). S3 clients
reach all of this through s3api with the same headers, or with
``x-amz-meta-dss-object-class`` / ``x-amz-meta-dss-range-class`` user metadata, which the
middleware takes as classes and reports back in the same form.

Malformed class information is answered with 400, class information beyond the configured
limits with 413, and a class the client may not set with 403, each with a one-line reason.

A request without class information is answered exactly as without dss, whoever sends it.
Class information rides on its request and needs what that request needs: the middleware
asks the auth middleware the proxy's own question (:mod:`swift_dss.proxy_authorize`) before
it looks at the object, so a user who may write but not read (an ``X-Container-Write`` ACL)
may POST and reclassify, and learns nothing of the object from it. A GET that changes
classes also needs write access. The counters of :mod:`swift_dss.middleware_metrics` go
to StatsD when the section sets ``log_statsd_host``.

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
    # StatsD counters (Swift's options): dss.classes_set, dss.reclassified, dss.refused.*
    # log_statsd_host = 127.0.0.1
    # log_statsd_port = 8125
    # log_statsd_metric_prefix =

The feature is advertised in ``/info`` under ``dss``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import partial

from swift.common.constraints import valid_api_version
from swift.common.http import is_server_error, is_success
from swift.common.registry import register_swift_info
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
from swift.common.utils import get_logger, list_from_csv
from swift.common.wsgi import make_subrequest

from swift_dss.class_post import (
    SWIFT_SOURCE,
    head,
    post_classes,
    set_sysmeta,
)
from swift_dss.classed_response import COPY_SOURCE, ClassedResponse
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
    file_flags,
    from_sysmeta,
    read_classfile,
)
from swift_dss.formats.headers import (
    ENV_META_OBJECT_CLASS,
    ENV_META_RANGE_CLASS,
    ENV_OBJECT_CLASS,
    ENV_RANGE_CLASS,
)
from swift_dss.formats.sysmeta import CLASS_KEY, environ_key
from swift_dss.middleware_metrics import (
    CLASSES_SET,
    RECLASSIFIED,
    REFUSAL_STATUSES,
    STATSD_PREFIX,
    count_success,
    refused,
)
from swift_dss.object_head import object_size, put_size, status_response
from swift_dss.proxy_authorize import authorize_as_proxy
from swift_dss.settable_classes import SettableClasses, format_class_set

DEFAULT_PRESERVE_HEADERS = (
    "content-disposition, content-encoding, x-delete-at, x-object-manifest, "
    "cache-control, content-language, expires, x-robots-tag"
)
# The request headers every object request is checked for, as environ keys: reading the
# environ directly spares swob's header proxy its conversions on each lookup.
ENV_OBJECT_FILE = environ_key(OBJECT_FILE)
ENV_CLASS_FILE = environ_key(CLASS_FILE)
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


def _has_classes(env: Mapping[str, object]) -> bool:
    return any(k in env for k in _ENV_CLASS_HEADERS)


class DssMiddleware:
    def __init__(self, app: object, conf: Mapping[str, str], logger: object = None) -> None:
        self.app = app
        self.conf = conf
        self.logger = logger or get_logger(
            dict(conf), log_route="dss", statsd_tail_prefix=STATSD_PREFIX
        )
        self.limits = Limits.from_conf(conf)
        self.settable = SettableClasses(conf, self.limits)
        self.preserve_headers = frozenset(
            h.lower() for h in list_from_csv(conf.get("preserve_headers", DEFAULT_PRESERVE_HEADERS))
        )

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
            if err_resp.status_int in REFUSAL_STATUSES:
                self.logger.increment(refused(err_resp.status_int))
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

    def _denied(self, req: Request, method: str | None = None) -> Response | None:
        """The auth middleware's answer when the proxy would refuse the request (or its
        ``method`` on the same object), else None."""
        return authorize_as_proxy(req.environ, self.app, SWIFT_SOURCE, method)

    def _fit(
        self, req: Request, cmap: ClassMap, current: Response, may_read: bool, blk: int = 0
    ) -> ClassMap:
        """``cmap`` checked against the object's size (see ``ClassMap.fitted``). A caller who
        may not read the object learns nothing of its size: what lies beyond the end is
        dropped, not refused."""
        size = object_size(current)
        if size is None:
            return cmap
        try:
            return cmap.fitted(size, blk)
        except ClassError as err:
            if may_read or not self._denied(req, "HEAD"):
                raise self._error(err, req) from None
            return cmap.clipped(size)

    # -- PUT ----------------------------------------------------------------------------

    def handle_put(self, req: Request, account: str, start_response: object) -> Iterable[bytes]:
        env = req.environ
        try:
            class_file, object_file = file_flags(
                env.get(ENV_CLASS_FILE), env.get(ENV_OBJECT_FILE), "PUT",
                copy=env.get("swift.source") == COPY_SOURCE,
            )  # fmt: skip
        except ClassError as err:
            # After the write check, as for every class header.
            return (self._denied(req) or self._error(err, req))(env, start_response)
        if class_file:
            return self.put_class_file(req, account, start_response)
        if not object_file and not _has_classes(env):
            # Sysmeta a COPY or versioning subrequest brought along stays: the copy keeps
            # the source's classes.
            return self.app(env, start_response)
        # As in the proxy: a caller who may not write hears that before anything else.
        denial = self._denied(req)
        if denial is not None:
            return denial(env, start_response)
        try:
            size = put_size(env)
        except ValueError:
            raise HTTPBadRequest(
                body="Content-Length is not a number\n", request=req, content_type="text/plain"
            ) from None
        if object_file:
            cmap = self._strip_object_file(req, size)
        else:
            cmap = self._header_classes(req, size)
        if cmap is None:
            return self.app(env, start_response)
        self._authorize(req, account, cmap)
        set_sysmeta(req, cmap)
        return self.app(env, count_success(self.logger, CLASSES_SET, start_response))

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
                cmap = cf.fitted(size)
            else:
                cmap = cf.classmap
        except ClassError as err:
            raise self._error(err, req) from None
        if size is not None:
            req.environ["CONTENT_LENGTH"] = str(size)
        if header_default is not None and not cmap.default:
            cmap = cmap.with_default(header_default.default)
        req.headers.pop(OBJECT_FILE, None)
        return cmap

    def put_class_file(self, req: Request, account: str, start_response: object) -> Iterable[bytes]:
        """PUT with X-DSS-Class-File: reclassify the existing object from a class file."""
        denial = self._denied(req)
        if denial is not None:
            return denial(req.environ, start_response)
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
        current = head(req, self.app)
        if not is_success(current.status_int):
            return status_response(current, req)(req.environ, start_response)
        resp = self.reclassify(req, cmap, current, may_read=False, blk=cf.block_sectors)
        return resp(req.environ, start_response)

    # -- POST and reclassification ------------------------------------------------------

    def handle_post(self, req: Request, account: str, start_response: object) -> Iterable[bytes]:
        env = req.environ
        has_classes = _has_classes(env)
        denial = self._denied(req)
        if denial is not None:
            # Without classes the proxy gives its own answer, exactly as without dss.
            return denial(env, start_response) if has_classes else self.app(env, start_response)
        try:
            file_flags(env.get(ENV_CLASS_FILE), env.get(ENV_OBJECT_FILE), "POST")
        except ClassError as err:
            raise self._error(err, req) from None
        cmap = self._header_classes(req, None) if has_classes else None
        if cmap is not None:
            self._authorize(req, account, cmap)
        current = head(req, self.app)
        if not is_success(current.status_int):
            if cmap is None and not is_server_error(current.status_int):
                return self.app(env, start_response)
            return status_response(current, req)(env, start_response)
        if cmap is None:
            # Swift replaces transient sysmeta on every POST: the stored classes go along.
            stored = self._stored_classes(current)
            if stored is not None:
                set_sysmeta(req, stored, current)
            return self.app(env, start_response)
        # A POST of classes alone changes classes alone.
        alone = not any(k.lower().startswith("x-object-meta-") for k in req.headers)
        fit = partial(self._fit, req, cmap, may_read=False)
        resp, cmap = post_classes(
            req, self.app, env, current, fit, self.preserve_headers if alone else None
        )
        if is_success(resp.status_int):
            # Swift's own answer, with the classes now stored as every reclassification has.
            self.logger.increment(RECLASSIFIED)
            resp.headers.update(classmap_to_headers(cmap))
        return resp(env, start_response)

    def handle_read(self, req: Request, account: str, start_response: object) -> Iterable[bytes]:
        env = req.environ
        if env.get("swift.source") == COPY_SOURCE:
            # The copy middleware's read of a COPY's source carries the COPY's headers: its
            # classes are the destination's, set on the destination's PUT, not the source's.
            env.pop(ENV_OBJECT_CLASS, None)
            env.pop(ENV_RANGE_CLASS, None)
        elif req.method == "GET" and (ENV_OBJECT_CLASS in env or ENV_RANGE_CLASS in env):
            denial = self._denied(req)
            if denial is not None:
                return denial(env, start_response)
            cmap = self._header_classes(req, None)
            assert cmap is not None
            self._authorize(req, account, cmap)
            current = head(req, self.app)
            # Readers that send their classes with every GET must not pay for a POST each.
            if is_success(current.status_int) and not self._holds(
                current, self._fit(req, cmap, current, may_read=True)
            ):
                self._reclassify_on_read(req, cmap, current)
            env.pop(ENV_OBJECT_CLASS, None)
            env.pop(ENV_RANGE_CLASS, None)
        return ClassedResponse(self.app, self.limits, self.logger).handle(env, start_response)

    def _reclassify_on_read(self, req: Request, cmap: ClassMap, current: Response) -> None:
        # A class change is a write, whatever request carries it.
        if self._denied(req, "POST") is not None:
            raise HTTPForbidden(
                body="changing an object's classes needs write access to it\n",
                request=req,
                content_type="text/plain",
            )
        resp = self.reclassify(req, cmap, current, may_read=True)
        if not is_success(resp.status_int):
            raise resp

    def reclassify(
        self, req: Request, asked: ClassMap, current: Response, may_read: bool, blk: int = 0
    ) -> Response:
        """Store ``asked``, fitted to the object, as its classes, changing nothing else."""
        # The POST carries the client's own swift.authorize: the proxy checks it again.
        post = make_subrequest(
            req.environ, method="POST", path=req.path, headers={}, swift_source=SWIFT_SOURCE
        )
        fit = partial(self._fit, req, asked, may_read=may_read, blk=blk)
        resp, cmap = post_classes(req, self.app, post.environ, current, fit, self.preserve_headers)
        if not is_success(resp.status_int):
            # The POST's own answer carries a POST's headers; one made for req, its reason.
            return resp if resp.request is req else status_response(resp, req)
        self.logger.increment(RECLASSIFIED)
        return HTTPAccepted(request=req, headers=classmap_to_headers(cmap))

    def _stored_classes(self, current: Response) -> ClassMap | None:
        try:
            return from_sysmeta(current.headers, self.limits)
        except ClassError as err:
            self.logger.warning("object has corrupt class sysmeta: %s", err)
            return None

    def _holds(self, current: Response, cmap: ClassMap) -> bool:
        """Whether the object is classified as ``cmap`` already, in whatever form (an object
        never classified is class 0 throughout; one whose classes are corrupt is not)."""
        if current.headers.get(CLASS_KEY) is None:
            return cmap.classifies_like(ClassMap())
        stored = self._stored_classes(current)
        return stored is not None and stored.classifies_like(cmap)


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
