"""Object server for swift-dss: every chunk of object data goes to the device through dssio
with its class.

The classes of an object are its class map, stored as object transient sysmeta by the dss
proxy middleware (see :mod:`swift_dss.formats.sysmeta`). A PUT writes each chunk with the
class of its bytes, split at class boundaries; a GET reads each piece with its stored class
(ranged GETs included); a POST that changes the class map reclassifies the stored bytes.
A POST from the dss middleware is held to the upload it read (:mod:`swift_dss.class_post`):
refused with 409 where newer data is here, and its classes (and the metadata it re-sent)
set aside for an upload that lands after it.
Replicated objects arrive through ssync's PUT and POST subrequests and take the same paths.
Only replication policies served by Swift's stock diskfile are classified; other policies
keep their own diskfile and reach the device unclassified.

Configuration, in ``[app:object-server]`` next to Swift's own options::

    [app:object-server]
    use = egg:swift_dss#object
    # auto: per device, tier when the device is a dss-tier mount, else none.
    # tier: dss-tier ioctls; kernel: O_CLASSIFY and readv/writev with a class byte (a
    # DSS-patched kernel); none: classes only in Swift metadata; record: a JSON line per I/O
    # in dssio_record_log around the I/O of dssio_record_inner (tests).
    dssio_backend = auto
    # Per-device override, e.g. for a device named sdb1:
    # dssio_backend_sdb1 = none
    # Required by the record backend:
    # dssio_record_log = /var/log/swift/dssio-record.jsonl
    # Which backend then does the I/O the record backend logs: auto (tier on a dss-tier
    # mount, else none), none or tier.
    # dssio_record_inner = auto
    # Required by the kernel backend: the patched kernel's O_CLASSIFY open flag (decimal,
    # or 0x / 0o prefixed); stock headers have no such flag.
    # dssio_kernel_o_classify = 0x40000000

A class map that cannot be decoded never fails a request: it is logged and the object is
treated as unclassified (class 0).

Where Swift drops an object's data from the page cache (``fadvise(DONTNEED)`` after a PUT's
fsync, every ``bytes_per_sync`` of a PUT, and as a GET goes unless the object is kept
cached), the drop is repeated through dssio: a dss-tier mount never hears of fadvise, and
its modelled page cache would otherwise keep data a real node's kernel has let go. A drop
that fails is logged, as Swift logs a failed fadvise, and never fails the request.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping
from typing import Any

from eventlet import tpool
from swift.common.exceptions import DiskFileError
from swift.common.request_helpers import is_backend_open_expired
from swift.common.storage_policy import POLICIES, REPL_POLICY
from swift.common.swob import HeaderEnvironProxy, HeaderKeyDict, HTTPConflict, Response
from swift.common.utils import drop_buffer_cache, fdatasync, public
from swift.obj import server
from swift.obj.diskfile import DiskFile, DiskFileManager, DiskFileReader, DiskFileWriter

from swift_dss import dssio
from swift_dss.class_post import DATA_TIMESTAMP, data_is_newer, metadata_for_data
from swift_dss.formats import ClassError, ClassMap, from_sysmeta, sysmeta_keys, to_sysmeta
from swift_dss.formats.sysmeta import CLASS_KEY, EnvironHeaders, HeaderSource
from swift_dss.object_head import SLO_SIZE

BACKEND_NAMES = ("auto", "tier", "kernel", "none", "record")
UNCLASSIFIED = ClassMap()
_OVERRIDE_PREFIX = "dssio_backend_"
#: Metadata of a manifest, whose ranges refer to the large object it stands for.
_MANIFEST_KEYS = frozenset(("x-object-manifest", SLO_SIZE.lower()))


def _case_insensitive(metadata: Mapping[str, str]) -> HeaderSource | None:
    """``metadata`` as something :func:`from_sysmeta` can read, or None when it holds no dss
    sysmeta; copies only when the keys are in an unusual case."""
    if isinstance(metadata, HeaderEnvironProxy):
        return EnvironHeaders(metadata.environ)
    if isinstance(metadata, HeaderKeyDict):
        return metadata
    if CLASS_KEY in metadata:
        # Swift's diskfile metadata: keys title-cased as HeaderKeyDict would have them.
        return metadata
    if not sysmeta_keys(metadata):
        return None
    return HeaderKeyDict(metadata)


def stored_classes(metadata: Mapping[str, str], logger: Any, what: str) -> ClassMap | None:
    """The class map in ``metadata`` (headers or diskfile metadata), None when it has none.

    A corrupt map is logged and read as unclassified rather than failing the request.
    """
    headers = _case_insensitive(metadata)
    if headers is None:
        return None
    try:
        return from_sysmeta(headers)
    except ClassError as e:
        logger.warning(
            "dss class sysmeta of %s is corrupt (%s); treating it as unclassified", what, e
        )
        return UNCLASSIFIED


class DeviceBackends:
    """The dssio backend of each device, from the object server's configuration."""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self.default = self._name(conf.get("dssio_backend", "auto"), "dssio_backend")
        self.overrides = {
            key[len(_OVERRIDE_PREFIX) :]: self._name(value, key)
            for key, value in conf.items()
            if key.startswith(_OVERRIDE_PREFIX)
        }
        used = {self.default, *self.overrides.values()}
        self.options: dict[str, dict[str, Any]] = {"none": {}, "tier": {}}
        record_log = conf.get("dssio_record_log")
        inner = str(conf.get("dssio_record_inner", "auto")).strip().lower()
        if inner not in dssio.RECORD_INNER:
            raise ValueError(
                f"dssio_record_inner = {inner!r}: expected one of {', '.join(dssio.RECORD_INNER)}"
            )
        if record_log:
            self.options["record"] = {"log": record_log, "inner": inner}
        elif "record" in used:
            raise ValueError("dssio_backend record needs dssio_record_log")
        o_classify = conf.get("dssio_kernel_o_classify")
        if o_classify:
            try:
                self.options["kernel"] = {"o_classify": int(str(o_classify), 0)}
            except ValueError:
                raise ValueError(
                    f"dssio_kernel_o_classify {o_classify!r} is not an integer"
                ) from None
        elif "kernel" in used:
            raise ValueError("dssio_backend kernel needs dssio_kernel_o_classify")
        self._backends: dict[str, dssio.Backend] = {}
        self._by_device: dict[str, dssio.Backend] = {}
        for name in used - {"auto"}:
            # Build now so that a bad option fails at start-up, not on the first request.
            self._backend(name)

    @staticmethod
    def _name(value: str, key: str) -> str:
        name = str(value).strip().lower()
        if name not in BACKEND_NAMES:
            raise ValueError(f"{key} = {value!r}: expected one of {', '.join(BACKEND_NAMES)}")
        return name

    def _backend(self, name: str) -> dssio.Backend:
        backend = self._backends.get(name)
        if backend is None:
            backend = self._backends[name] = dssio.get_backend(name, **self.options[name])
        return backend

    def _configured(self, device_path: str) -> str:
        return self.overrides.get(os.path.basename(device_path.rstrip("/")), self.default)

    def name_for(self, device_path: str) -> str:
        name = self._configured(device_path)
        if name == "auto":
            # Cached per filesystem by dssio, so a device mounted after start-up is seen.
            name = dssio.detect_backend(device_path)
        return name

    def for_device(self, device_path: str) -> dssio.Backend:
        backend = self._by_device.get(device_path)
        if backend is None:
            backend = self._backend(self.name_for(device_path))
            if self._configured(device_path) != "auto":
                # A configured name never changes; auto must keep looking (a device may be
                # mounted after start-up).
                self._by_device[device_path] = backend
        return backend


class ClassifiedReadFile:
    """The data file as the reader sees it: each read goes through dssio with the class of
    the bytes it covers and stops at the next class boundary, so one read is one class."""

    def __init__(self, fp: Any, classes: ClassMap, backend: dssio.Backend) -> None:
        self._fp = fp
        self._fd: int = fp.fileno()
        self._classes = classes
        self._uniform = classes.uniform_class
        self._backend = backend
        # Reads bypass fp's buffer, so the descriptor's offset is the one that counts.
        self._pos = os.lseek(self._fd, fp.tell(), os.SEEK_SET)

    def fileno(self) -> int:
        return self._fd

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        self._pos = os.lseek(self._fd, offset, whence)
        return self._pos

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            size = max(os.fstat(self._fd).st_size - self._pos, 0)
        if size == 0:
            return b""
        cls = self._uniform
        if cls is None:
            _offset, size, cls = next(self._classes.segments(self._pos, size))
        data = self._backend.dread(self._fd, cls, size)
        self._pos += len(data)
        return data

    def close(self) -> None:
        if self._fp is not None:
            self._backend.release(self._fd)
            fp, self._fp = self._fp, None
            fp.close()


def drop_cache(backend: dssio.Backend, fd: int, offset: int, length: int, logger: Any) -> None:
    """Repeat a drop_buffer_cache of ``fd`` to the storage below ``backend``."""
    try:
        backend.drop_cache(fd, offset, length)
    except dssio.DssioError as e:
        logger.warning("dss drop_cache(%s, %s) failed: %s", offset, length, e)


class ClassifiedDiskFileReader(DiskFileReader):
    def __init__(self, fp: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(fp, *args, **kwargs)
        df = self._diskfile
        backend = df.dssio_backend()
        # Where no class reaches the device (dssio none), the reads are stock Swift's.
        self._classified = backend.carries_classes
        if self._classified:
            self._fp = ClassifiedReadFile(fp, df.class_map(), backend)

    def can_zero_copy_send(self) -> bool:
        # splice() moves data without a read the class could ride on.
        return not self._classified and super().can_zero_copy_send()

    def _drop_cache(self, fd: int, offset: int, length: int) -> None:
        super()._drop_cache(fd, offset, length)
        if not self._keep_cache:
            backend = self._diskfile.dssio_backend()
            drop_cache(backend, fd, offset, length, self._logger)


class ClassifiedDiskFileWriter(DiskFileWriter):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._classes = UNCLASSIFIED
        self._backend: dssio.Backend | None = None

    def classify(self, classes: ClassMap | None) -> None:
        """Classes of the data to come, by byte offset in the object."""
        self._classes = classes or UNCLASSIFIED

    def open(self) -> ClassifiedDiskFileWriter:
        super().open()
        self._backend = self._diskfile.dssio_backend()
        return self

    @property
    def carries_classes(self) -> bool:
        """Whether the classes of the data reach the device."""
        return (self._backend or self._diskfile.dssio_backend()).carries_classes

    def write(self, chunk: bytes) -> None:
        """As Swift's write (etag, upload size, sync cadence), one dssio write per class."""
        if not self.carries_classes:
            return super().write(chunk)
        if not self._fd:
            raise ValueError("Writer is not open")
        self._chunks_etag.update(chunk)
        cls = self._classes.uniform_class
        if cls is not None:
            self._write_all(cls, chunk)
        else:
            base = self._upload_size
            view = memoryview(chunk)
            for offset, length, seg_cls in self._classes.segments(base, len(chunk)):
                self._write_all(seg_cls, view[offset - base : offset - base + length])

        diff = self._upload_size - self._last_sync
        if diff >= self._bytes_per_sync:
            tpool.execute(fdatasync, self._fd)
            drop_buffer_cache(self._fd, self._last_sync, diff)
            drop_cache(self._backend, self._fd, self._last_sync, diff, self.logger)
            self._last_sync = self._upload_size

    def put(self, metadata: dict[str, str]) -> None:
        """As Swift's put, with the stored classes fitted to the data received."""
        self._fit_classes(metadata)
        super().put(metadata)

    def _fit_classes(self, metadata: dict[str, str]) -> None:
        # A chunked PUT's length is not known to the proxy, which checks ranges against the
        # length: here it is. What is stored then says only what the object holds, as for a
        # PUT of known length; a block-based file's last block is clipped the same way.
        cmap = self._classes
        if not cmap.ranges or any(k.lower() in _MANIFEST_KEYS for k in metadata):
            return
        fitted = cmap.clipped(self._upload_size)
        if fitted != cmap:
            for key in sysmeta_keys(metadata):
                del metadata[key]
            metadata.update(to_sysmeta(fitted))

    def _finalize_put(self, *args: Any, **kwargs: Any) -> None:
        # Swift's own drop of the whole object, after the fsync, is inside this.
        super()._finalize_put(*args, **kwargs)
        backend = self._backend or self._diskfile.dssio_backend()
        drop_cache(backend, self._fd, 0, self._upload_size, self.logger)

    def _write_all(self, cls: int, piece: bytes | memoryview) -> None:
        while piece:
            written = self._backend.dwrite(self._fd, cls, piece)
            self._upload_size += written
            piece = piece[written:]

    def close(self) -> None:
        if self._fd and self._backend is not None:
            self._backend.release(self._fd)
        super().close()


class ClassifiedDiskFile(DiskFile):
    reader_cls = ClassifiedDiskFileReader
    writer_cls = ClassifiedDiskFileWriter

    def dssio_backend(self) -> dssio.Backend:
        return self.manager.dssio.for_device(self._device_path)

    def class_map(self) -> ClassMap:
        """The stored class map of the opened object (a POST's .meta already merged)."""
        return stored_classes(self.get_metadata(), self._logger, self._datadir) or UNCLASSIFIED

    def _construct_from_data_file(
        self, data_file: str, meta_file: str | None, *args: Any, **kwargs: Any
    ) -> Any:
        fp = super()._construct_from_data_file(data_file, meta_file, *args, **kwargs)
        if meta_file:
            self._metadata = metadata_for_data(
                self._metadata, self._datafile_metadata, self._metafile_metadata
            )
        return fp

    def write_metadata(self, metadata: dict[str, str]) -> None:
        """Store POST metadata; then, if it carries a different class map, reclassify the
        stored data. A POST without class sysmeta leaves the data's classes alone."""
        before = self._metadata
        super().write_metadata(metadata)
        if not before or not self._data_file:
            return
        new = stored_classes(metadata, self._logger, self._datadir)
        if new is None:
            return
        old = stored_classes(before, self._logger, self._datadir) or UNCLASSIFIED
        if not new.classifies_like(old):
            self.reclassify(new, int(before["Content-Length"]))

    def reclassify(self, classes: ClassMap, size: int) -> None:
        backend = self.dssio_backend()
        if not backend.carries_classes:
            return
        try:
            fd = os.open(self._data_file, backend.reclassify_mode | os.O_CLOEXEC)
        except OSError as e:
            if e.errno != errno.ENOENT:
                raise
            # A newer PUT replaced the data and classified it as it wrote it.
            self._logger.debug("not reclassifying %s: gone", self._data_file)
            return
        try:
            for offset, length, cls in classes.segments(0, size):
                backend.reclassify(fd, offset, length, cls)
        finally:
            backend.release(fd)
            os.close(fd)


class ClassifiedDiskFileManager(DiskFileManager):
    diskfile_cls = ClassifiedDiskFile

    def __init__(
        self, conf: Mapping[str, Any], logger: Any, backends: DeviceBackends | None = None
    ) -> None:
        super().__init__(conf, logger)
        self.dssio = backends or DeviceBackends(conf)


class ObjectController(server.ObjectController):
    """Swift's object server, with object data going through dssio."""

    def setup(self, conf: Mapping[str, Any]) -> None:
        super().setup(conf)
        self.dssio = DeviceBackends(conf)
        managers = self._diskfile_router.policy_to_manager
        for policy in POLICIES:
            stock = managers[int(policy)]
            # Only the stock replication diskfile is known to be safe to extend; an operator's
            # own diskfile_module is left alone.
            if policy.policy_type == REPL_POLICY and type(stock) is DiskFileManager:
                managers[int(policy)] = ClassifiedDiskFileManager(conf, self.logger, self.dssio)
            else:
                self.logger.warning(
                    "storage policy %s (%s) is not classified by dssio", int(policy), policy.name
                )

    @public
    def POST(self, request: Any) -> Response:
        """Swift's POST; one that changes classes (it names the data it was meant for) is
        refused with 409 where this server holds newer data."""
        seen = request.headers.get(DATA_TIMESTAMP)
        if seen is not None and self._holds_newer_data(request, seen):
            return HTTPConflict(
                body="the object was replaced since its classes were read\n",
                request=request,
                content_type="text/plain",
            )
        return super().POST(request)

    def _holds_newer_data(self, request: Any, seen: str) -> bool:
        place = server.get_obj_name_and_placement(request)
        try:
            disk_file = self.get_diskfile(
                *place[:5], policy=place[5],
                open_expired=is_backend_open_expired(request),
                next_part_power=request.headers.get("X-Backend-Next-Part-Power"),
            )  # fmt: skip
            with disk_file.open():
                return data_is_newer(disk_file.data_timestamp, seen)
        except DiskFileError:
            # No object, or none to be read now: Swift's POST gives its own answer.
            return False

    def _stage_obj_data(
        self, request: Any, device: str, obj_input: Any, writer: Any, fsize: int | None
    ) -> tuple[int, str]:
        classify = getattr(writer, "classify", None)
        if classify is not None and writer.carries_classes:
            # PATH_INFO, not request.path: only a corrupt map needs a name, for its log line.
            classify(stored_classes(request.headers, self.logger, request.environ["PATH_INFO"]))
        return super()._stage_obj_data(request, device, obj_input, writer, fsize)


def app_factory(global_conf: Mapping[str, Any], **local_conf: Any) -> ObjectController:
    """paste.deploy app factory for creating WSGI object server apps"""
    conf = dict(global_conf)
    conf.update(local_conf)
    return ObjectController(conf)


__all__ = [
    "BACKEND_NAMES",
    "ClassifiedDiskFile",
    "ClassifiedDiskFileManager",
    "ClassifiedDiskFileReader",
    "ClassifiedDiskFileWriter",
    "ClassifiedReadFile",
    "DeviceBackends",
    "ObjectController",
    "app_factory",
]
