"""The object's classes added to a HEAD or GET response of the ``dss`` middleware."""

from __future__ import annotations

from collections.abc import Iterable

from swift.common.http import is_success
from swift.common.wsgi import WSGIContext

from swift_dss.formats import (
    OBJECT_CLASS,
    RANGE_CLASS,
    ClassError,
    ClassMap,
    Limits,
    classmap_to_headers,
    from_sysmeta,
)
from swift_dss.formats.headers import META_OBJECT_CLASS, META_RANGE_CLASS
from swift_dss.formats.sysmeta import PREFIX

#: The copy middleware's source GETs: their classes travel as sysmeta, not as client headers.
COPY_SOURCE = "SSC"
S3_SOURCE = "S3"
_LOWER_SYSMETA_PREFIX = PREFIX.lower()


class ClassedResponse(WSGIContext):
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
