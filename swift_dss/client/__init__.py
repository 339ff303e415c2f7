"""The swift-dss client: classes from the client's side of the wire.

- :mod:`~swift_dss.client.api`: ``DssClient``, Swift operations with classes.
- :mod:`~swift_dss.client.classifier`: ``Classifier``, a class from a file's type and size.
- :mod:`~swift_dss.client.s3`: ``attach_classes`` and ``dss_s3_client`` for boto3.
- :mod:`~swift_dss.client.cli`: the ``dss`` client commands.

The names below load their module on first use, so importing the package stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "DssClient": "api",
    "DssError": "api",
    "DssRequestError": "api",
    "Classifier": "classifier",
    "attach_classes": "s3",
    "dss_s3_client": "s3",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
