"""What the ``dss`` middleware counts.

The counters go out as StatsD metrics, the way Swift's own middlewares send theirs: the
``log_statsd_*`` options of the ``[filter:dss]`` section (or of ``[DEFAULT]``) name the
StatsD server, and every metric is ``[<log_statsd_metric_prefix>.]dss.<name>``:

- ``dss.classes_set``: PUTs that stored classes the client sent;
- ``dss.reclassified``: reclassifications that succeeded (POST or GET with class headers,
  PUT with ``X-DSS-Class-File``);
- ``dss.refused.400``, ``dss.refused.403``, ``dss.refused.413``: requests the middleware
  itself refused, by kind (malformed class information, a class the caller may not set,
  class information beyond the limits). Refusals by the auth middleware are its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

STATSD_PREFIX = "dss"
CLASSES_SET = "classes_set"
RECLASSIFIED = "reclassified"
REFUSAL_STATUSES = (400, 403, 413)


def refused(status: int) -> str:
    return f"refused.{status}"


def count_success(
    logger: object,
    metric: str,
    start_response: Callable,
    extra_headers: Mapping[str, str] | None = None,
) -> Callable:
    """``start_response`` that counts ``metric`` when the response is a success, and then
    sets ``extra_headers`` on it."""

    def counting(status: str, headers: list, exc_info: object = None) -> object:
        if status[:1] == "2":
            logger.increment(metric)
            if extra_headers:
                names = {k.lower() for k in extra_headers}
                headers = [h for h in headers if h[0].lower() not in names]
                headers.extend(extra_headers.items())
        return start_response(status, headers, exc_info)

    return counting
