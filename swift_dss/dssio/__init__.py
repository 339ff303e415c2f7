"""dssio: I/O that carries a data class down to the storage (docs/architecture.md, "dssio").

``dwrite(fd, cls, data)``, ``dread(fd, cls, size)``, their positional forms ``pdwrite`` and
``pdread``, and ``reclassify(fd, offset, length, cls)`` pick the backend from the file's
filesystem (a dss-tier mount gets ``tier``, anything else ``none``). ``get_backend`` gives a
named backend (``none``, ``tier``, ``kernel``, ``record``) for callers that configure one.
Call ``release(fd)`` before closing a file used through dssio.
"""

from swift_dss.dssio.api import (
    backend_for_fd,
    dread,
    dwrite,
    get_backend,
    pdread,
    pdwrite,
    reclassify,
    release,
)
from swift_dss.dssio.backends import (
    BACKENDS,
    MAX_CLASS,
    RECORD_INNER,
    Backend,
    DssioError,
    KernelBackend,
    NoneBackend,
    RecordBackend,
    TierBackend,
)
from swift_dss.dssio.detect import TIER_FSTYPE, detect_backend, forget_detections
from swift_dss.dssio.ioctls import DROP_CACHE, RECLASSIFY, SET_CLASS, IoctlSpec, load_ioctls
from swift_dss.dssio.oslayer import OsLayer

__all__ = [
    "BACKENDS",
    "DROP_CACHE",
    "MAX_CLASS",
    "RECLASSIFY",
    "RECORD_INNER",
    "SET_CLASS",
    "TIER_FSTYPE",
    "Backend",
    "DssioError",
    "IoctlSpec",
    "KernelBackend",
    "NoneBackend",
    "OsLayer",
    "RecordBackend",
    "TierBackend",
    "backend_for_fd",
    "detect_backend",
    "dread",
    "dwrite",
    "forget_detections",
    "get_backend",
    "load_ioctls",
    "pdread",
    "pdwrite",
    "reclassify",
    "release",
]
