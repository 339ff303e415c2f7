"""Run one stock Swift server with a cluster's own swift.conf and log file.

    python -m swift_dss.deploy.swiftrun --swift-conf DIR/swift.conf --log-file FILE \\
        swift-proxy-server DIR/proxy-server.conf

Why a launcher rather than the bare console script:

- swift.conf. The ``swift_dir`` option only reaches the hash path prefix/suffix and the
  rings. Storage policies and constraints are parsed from ``/etc/swift/swift.conf`` when
  ``swift.common.storage_policy`` and ``swift.common.constraints`` are first imported, and
  Swift has no environment variable for that path. Pointing
  ``swift.common.utils.SWIFT_CONF_FILE`` at the cluster's file before those imports gives
  every part of the server the same swift.conf, with nothing written under /etc.
- Logging. Swift logs only to syslog (``log_address``, ``log_udp_host``); the
  ``log_custom_handlers`` hook is not passed on to proxy-logging's access logger, and once
  a server is up it sends stdout and stderr to its logger. Swapping Swift's syslog handler
  class for a file handler sends every Swift logger of the process, access log included,
  to one file.
- Crashes. Once up, a server points its stdout and stderr at /dev/null, so a fatal signal
  (a fault in a C extension) would end it without a word; faulthandler writes the Python
  stack of every thread to the log file instead.
"""

from __future__ import annotations

import argparse
import faulthandler
import logging.handlers
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any


def file_handler_class(path: str) -> type[logging.Handler]:
    """A handler class that takes ThreadSafeSysLogHandler's arguments and appends to PATH."""

    class SwiftFileHandler(logging.handlers.WatchedFileHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(path)

    return SwiftFileHandler


def use_swift_conf(swift_conf: Path) -> None:
    """Make every later Swift import read SWIFT_CONF instead of /etc/swift/swift.conf."""
    modules = ("swift.common.storage_policy", "swift.common.constraints")
    late = [m for m in modules if m in sys.modules]
    if late:
        raise RuntimeError(f"{', '.join(late)} already loaded from the default swift.conf")
    from swift.common import utils

    # The prefix/suffix may already hold values from /etc/swift/swift.conf: clear them so
    # that validate_configuration reads this cluster's.
    utils.SWIFT_CONF_FILE = str(swift_conf)
    utils.HASH_PATH_PREFIX = b""
    utils.HASH_PATH_SUFFIX = b""
    utils.validate_configuration()


def report_crashes(log_file: Path) -> None:
    """From now on, a fatal signal writes every thread's Python stack to LOG_FILE."""
    # faulthandler keeps a reference to the file it writes to: the handle stays open.
    faulthandler.enable(file=log_file.open("a"), all_threads=True)


def log_to_file(log_file: Path) -> None:
    from swift.common.utils import logs

    logs.ThreadSafeSysLogHandler = file_handler_class(str(log_file))


def command(swift_conf: Path, log_file: Path, server: str, *args: str) -> list[str]:
    """The command line that runs the console script SERVER with ARGS through this launcher."""
    return [
        sys.executable,
        "-m",
        "swift_dss.deploy.swiftrun",
        "--swift-conf",
        str(swift_conf),
        "--log-file",
        str(log_file),
        server,
        *args,
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m swift_dss.deploy.swiftrun")
    parser.add_argument("--swift-conf", type=Path, required=True)
    parser.add_argument("--log-file", type=Path, required=True)
    parser.add_argument("server", help="console script, e.g. swift-object-server")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(argv)
    found = entry_points(group="console_scripts", name=ns.server)
    if not found:
        parser.error(f"no console script {ns.server!r}")
    report_crashes(ns.log_file.resolve())
    use_swift_conf(ns.swift_conf.resolve())
    log_to_file(ns.log_file.resolve())
    sys.argv = [ns.server, *ns.args]
    sys.exit(next(iter(found)).load()())


if __name__ == "__main__":
    main()
