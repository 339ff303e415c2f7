"""The cost of dss: the same all-in-one cluster with and without it, measured side by side.

Both clusters run at once (the baseline has the stock pipeline and object server; ours has
the dss middleware and the dss object server on dssio's `none` backend), both on plain
directories on a tmpfs (tier mode none; `dss bench saio-tier` measures the tier), and the
rounds alternate between them so that drift in the machine's load falls on both alike. Every
request carries a class, which the baseline simply stores nowhere.
"""

from __future__ import annotations

import http.client
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit

from swift_dss.bench.report import Figure, ratio_ci
from swift_dss.deploy.saio import Saio, SaioConfig

KIB = 1024
SIZES = {"4KiB": 4 * KIB, "4MiB": 4 * KIB * KIB}


def batch(size: int) -> int:
    """Requests per round: small rounds, many of them, alternate the clusters finely enough
    that a burst of load elsewhere on the machine falls on both."""
    return 40 if size < 1 << 20 else 4


@dataclass
class Target:
    name: str
    cluster: Saio
    host: str
    port: int
    path: str
    token: str

    @classmethod
    def connect(cls, name: str, cluster: Saio) -> Target:
        url, token = cluster.get_token()
        parts = urlsplit(url)
        return cls(
            name, cluster, parts.hostname or "127.0.0.1", parts.port or 80, parts.path, token
        )

    def conn(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=120)


def _request(
    conn: http.client.HTTPConnection, method: str, path: str, headers: dict, body: bytes | None
) -> int:
    conn.request(method, path, body=body, headers=headers)
    resp = conn.getresponse()
    n = 0
    while chunk := resp.read(1 << 20):
        n += len(chunk)
    if resp.status >= 300:
        raise RuntimeError(f"{method} {path}: HTTP {resp.status}")
    return n


def run_round(target: Target, op: str, size: int, count: int, data: bytes) -> float:
    """Seconds for ``count`` sequential requests over one keep-alive connection."""
    conn = target.conn()
    headers = {"X-Auth-Token": target.token}
    # The objects are classified when written; a GET with class headers would reclassify.
    put_headers = {**headers, "X-DSS-Object-Class": "25", "Content-Length": str(size)}
    try:
        start = time.perf_counter()
        for i in range(count):
            path = f"{target.path}/bench/o{size}-{i}"
            if op == "put":
                _request(conn, "PUT", path, put_headers, data)
            else:
                _request(conn, "GET", path, headers, None)
        return time.perf_counter() - start
    finally:
        conn.close()


def measure(
    ours: Target,
    baseline: Target,
    rounds: int,
    goal: float,
    progress: Callable[[str], None] = lambda _msg: None,
) -> list[Figure]:
    """Throughput of each side, and requests per CPU-second of each side's servers.

    Wall-clock throughput is what the goal is about, but on a machine shared with other
    work it moves with whatever else runs; the CPU the servers spend per request does not,
    so it is reported beside it, with the same goal.
    """
    figures = []
    for label, size in SIZES.items():
        count = batch(size)
        data = bytes(range(256)) * (size // 256)
        for op in ("put", "get"):
            rates: dict[str, list[float]] = {"ours": [], "baseline": []}
            cpu: dict[str, list[float]] = {"ours": [], "baseline": []}
            unit = "ops/s" if size < 1 << 20 else "MB/s"
            scale = count if unit == "ops/s" else count * size / 1e6
            for r in range(rounds):
                # Alternate who goes first so neither always runs on a warmer machine.
                order = (ours, baseline) if r % 2 == 0 else (baseline, ours)
                for target in order:
                    key = "ours" if target is ours else "baseline"
                    before = target.cluster.cpu_seconds()
                    rates[key].append(scale / run_round(target, op, size, count, data))
                    cpu[key].append(target.cluster.cpu_seconds() - before)
                if (r + 1) % 5 == 0 or r + 1 == rounds:
                    progress(f"{op} {label}: round {r + 1}/{rounds}")
            name = f"{op.upper()} {label}"
            figures.append(
                Figure(
                    name,
                    statistics.median(rates["ours"]),
                    statistics.median(rates["baseline"]),
                    unit,
                    goal=goal,
                    ci=ratio_ci(rates["ours"], rates["baseline"]),
                )
            )
            requests = count * rounds
            figures.append(
                Figure(
                    f"{name} server CPU",
                    requests / max(sum(cpu["ours"]), 1e-9),
                    requests / max(sum(cpu["baseline"]), 1e-9),
                    "requests/CPU-s",
                    goal=goal,
                    # Requests per CPU-second: the baseline's CPU over ours.
                    ci=ratio_ci(cpu["baseline"], cpu["ours"], stat=sum),
                )
            )
    return figures


def compare(
    ours: SaioConfig,
    baseline: SaioConfig,
    rounds: int,
    goal: float,
    progress: Callable[[str], None] = print,
) -> list[Figure]:
    """Bring both clusters up, warm them, measure them side by side, take them down."""
    clusters = {"ours": Saio(ours), "baseline": Saio(baseline)}
    try:
        for c in clusters.values():
            c.up()
        targets = {k: Target.connect(k, c) for k, c in clusters.items()}
        for t in targets.values():
            conn = t.conn()
            _request(conn, "PUT", f"{t.path}/bench", {"X-Auth-Token": t.token}, b"")
            conn.close()
        # One warm-up round each fills caches and creates the objects the GETs read.
        for t in targets.values():
            for size in SIZES.values():
                run_round(t, "put", size, batch(size), bytes(size))
        return measure(targets["ours"], targets["baseline"], rounds, goal, progress)
    finally:
        for c in clusters.values():
            c.down()


def run(out: Path, rounds: int = 25, progress: Callable[[str], None] = print) -> list[Figure]:
    return compare(
        SaioConfig(dir=out / "with-dss", port=0, dss=True, dssio_backend="none", tier_mode=None),
        SaioConfig(dir=out / "without-dss", port=0, dss=False, tier_mode=None),
        rounds,
        goal=0.97,
        progress=progress,
    )


def run_control(
    out: Path, rounds: int = 25, progress: Callable[[str], None] = print
) -> list[Figure]:
    """Two identical stock clusters measured as `run` measures dss against stock: every
    ratio would be 1 on an idle machine, so how far they stray is how far a single run of
    `run` can be trusted on this one. Its figures carry no goal."""
    figures = compare(
        SaioConfig(dir=out / "stock-a", port=0, dss=False, tier_mode=None),
        SaioConfig(dir=out / "stock-b", port=0, dss=False, tier_mode=None),
        rounds,
        goal=0.97,
        progress=progress,
    )
    return [replace(f, goal=None) for f in figures]


# -- Python function calls per request, in-process ------------------------------------------
#
# Wall-clock and CPU figures on a shared machine move by more than the effects measured; the
# number of Python calls a request costs does not move at all, so it shows what a change to
# the dss code paths did. Counted with cProfile on the object servers and on the middleware
# alone (around a stand-in for the rest of the proxy), each against its stock counterpart.

_SWIFT_CONF = "[swift-hash]\nswift_hash_path_suffix = bench\n[storage-policy:0]\nname = gold\n"


def _calls(call: Callable[[], object], n: int) -> float:
    import cProfile
    import pstats

    call()  # warm: first-use imports and caches are not per-request costs
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(n):
        call()
    profile.disable()
    return pstats.Stats(profile).total_calls / n


def calls_per_request(n: int = 200) -> list[tuple[str, float, float]]:
    """(figure, calls with dss, calls without) for 4 KiB PUTs and GETs; the object server
    also against a stock one that is sent (and stores) the same class sysmeta.

    Points Swift at a temporary swift.conf, so run it in a process of its own:
    ``python -m swift_dss.bench.overhead``.
    """
    import tempfile

    from swift.common import storage_policy, utils
    from swift.common.swob import Request, Response
    from swift.obj import server as stock

    from swift_dss import objserver
    from swift_dss.formats import ClassMap, to_sysmeta
    from swift_dss.middleware import DssMiddleware

    shm = Path("/dev/shm")  # Swift's xattrs need a tmpfs
    root = Path(tempfile.mkdtemp(prefix="dss-calls-", dir=shm if shm.is_dir() else None))
    (root / "swift.conf").write_text(_SWIFT_CONF)
    utils.SWIFT_CONF_FILE = str(root / "swift.conf")
    utils.HASH_PATH_SUFFIX = b"bench"
    storage_policy.reload_storage_policies()
    sysmeta = to_sysmeta(ClassMap.build(25))
    client = {"X-DSS-Object-Class": "25"}
    data = bytes(range(256)) * 16
    stamps = iter(range(1_700_000_000, 1_800_000_000))
    servers = {}
    factories = {"dss": objserver.app_factory, "stock": stock.app_factory}
    # A stock server sent the same sysmeta: what Swift itself spends on carrying the class.
    factories["stock+sysmeta"] = stock.app_factory
    for name, factory in factories.items():
        (root / name / "d1").mkdir(parents=True)
        conf = {"devices": str(root / name), "mount_check": "false", "log_requests": "false"}
        servers[name] = factory({}, **conf, **({"dssio_backend": "none"} if name == "dss" else {}))

    def object_request(app: object, method: str, classes: dict[str, str]) -> None:
        headers = {"X-Backend-Storage-Policy-Index": "0", "X-Timestamp": f"{next(stamps)}.0"}
        if method == "PUT":
            headers.update({"Content-Type": "application/octet-stream", **classes})
        req = Request.blank("/d1/0/a/c/o", method=method, headers=headers)
        if method == "PUT":
            req.body = data
        resp = req.get_response(app)
        assert resp.status_int in (200, 201), resp.status
        b"".join(resp.app_iter)  # reads it all and closes the reader

    def proxy_rest(env: dict, start_response: Callable) -> object:
        # The rest of the pipeline: takes a PUT's body, answers a GET as an object server
        # holding a classified object would.
        if env["REQUEST_METHOD"] == "PUT":
            env["wsgi.input"].read()
            return Response(status=201)(env, start_response)
        headers = {"Content-Type": "application/octet-stream", "Etag": "0" * 32, **sysmeta}
        return Response(body=data, headers=headers)(env, start_response)

    def proxy_request(app: Callable, method: str) -> None:
        headers = {"X-DSS-Object-Class": "25"} if method == "PUT" else {}
        req = Request.blank("/v1/AUTH_test/c/o", method=method, headers=headers)
        req.environ["REMOTE_USER"] = "test:tester,test,AUTH_test"
        if method == "PUT":
            req.body = data
        b"".join(app(req.environ, lambda *_args: None))

    dss_proxy = DssMiddleware(proxy_rest, {})
    told = servers["stock+sysmeta"]
    out = []
    try:
        for method in ("PUT", "GET"):
            out.append(
                (
                    f"{method} 4KiB object server",
                    _calls(lambda m=method: object_request(servers["dss"], m, sysmeta), n),
                    # A stock proxy passes the client's class header on to the object
                    # servers; the dss middleware turns it into the sysmeta.
                    _calls(lambda m=method: object_request(servers["stock"], m, client), n),
                )
            )
            out.append(
                (
                    f"{method} 4KiB object server, stock given the sysmeta",
                    out[-1][1],
                    _calls(lambda m=method: object_request(told, m, sysmeta), n),
                )
            )
            out.append(
                (
                    f"{method} 4KiB proxy middleware",
                    _calls(lambda m=method: proxy_request(dss_proxy, m), n),
                    _calls(lambda m=method: proxy_request(proxy_rest, m), n),
                )
            )
    finally:
        import shutil

        shutil.rmtree(root, ignore_errors=True)
    return out


if __name__ == "__main__":
    print(f"{'Python calls per request':50} {'with dss':>9} {'without':>9} {'extra':>7}")
    for figure, ours, theirs in calls_per_request():
        print(f"{figure:50} {ours:9.1f} {theirs:9.1f} {ours - theirs:+7.1f}")
