"""``dss bench loadgen``: requests per client CPU-second for small objects, three clients
against the same local endpoint in one run.

- ours: this driver (one process, CurlMulti, ``CONCURRENCY`` transfers);
- Locust: FastHttpUser (geventhttpclient), ``CONCURRENCY`` users, headless;
- a plain loop: ``CONCURRENCY`` threads, each with a keep-alive http.client connection.

Each client runs in its own process and counts the CPU it spends while the load runs
(getrusage), so start-up costs are not charged to anyone. The endpoint is the local
asyncio object store (localserver.py) in a process of its own; the figure is requests per
client CPU-second, which the endpoint's speed changes little. Rounds alternate the order.
"""

from __future__ import annotations

import http.client
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from swift_dss import children
from swift_dss.bench.report import Figure, ratio_ci

SIZE = 4096
CONCURRENCY = 16
REQUESTS = 6000  # per round for the counted clients
LOCUST_SECONDS = 6


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


# --- the clients, each run as `python -m swift_dss.loadgen.bench CLIENT URL OP N` ------------


def client_ours(url: str, op: str, n: int) -> dict[str, float]:
    from swift_dss.loadgen.driver import Driver, DriverOptions
    from swift_dss.loadgen.payload import PayloadSource
    from swift_dss.loadgen.plan import Request
    from swift_dss.loadgen.protocols import Swift
    from swift_dss.loadgen.stats import Recorder

    proto = Swift(f"{url}/v1/AUTH_test", "AUTH_tk_local")
    rec = Recorder(time.time())
    driver = Driver(proto, PayloadSource(1), rec, DriverOptions(CONCURRENCY, 30))
    reqs = (
        Request(i, "b", op, "o", None, SIZE, None, "bench", f"obj/{op[0]}{i % 256}", i + 1000)
        for i in range(n)
    )
    cpu0 = _cpu()
    driver.run("b", reqs)
    cpu = _cpu() - cpu0
    driver.close()
    cells = list(rec.cells.values())
    return {"requests": sum(c.ops for c in cells), "failures": sum(c.failures for c in cells),
            "cpu_s": cpu}  # fmt: skip


def client_threads(url: str, op: str, n: int) -> dict[str, float]:
    host, port = url.removeprefix("http://").split(":")
    body = bytes(SIZE)
    per = n // CONCURRENCY
    failures = [0]

    def loop(t: int) -> None:
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        headers = {"X-Auth-Token": "AUTH_tk_local"}
        for i in range(per):
            path = f"/v1/AUTH_test/bench/obj/{op[0]}{(t * per + i) % 256}"
            if op == "put":
                conn.request("PUT", path, body=body, headers=headers)
            else:
                conn.request("GET", path, headers=headers)
            resp = conn.getresponse()
            resp.read()
            if resp.status >= 300:
                failures[0] += 1
        conn.close()

    threads = [threading.Thread(target=loop, args=(t,)) for t in range(CONCURRENCY)]
    cpu0 = _cpu()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"requests": per * CONCURRENCY, "failures": failures[0], "cpu_s": _cpu() - cpu0}


def _locust(url: str, op: str, seconds: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "locust.json"
        env = {**os.environ, "DSS_BENCH_OP": op, "DSS_BENCH_SIZE": str(SIZE),
               "DSS_BENCH_OUT": str(out)}  # fmt: skip
        locustfile = Path(__file__).with_name("locust_bench.py")
        cmd = [sys.executable, "-m", "locust", "-f", str(locustfile), "--headless",
               "-u", str(CONCURRENCY), "-r", str(CONCURRENCY), "-t", f"{seconds}s",
               "--host", f"{url}/v1/AUTH_test", "--only-summary", "--loglevel", "WARNING",
               "--stop-timeout", "5"]  # fmt: skip
        subprocess.run(cmd, env=env, cwd=tmp, check=False, timeout=seconds + 60,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        if not out.exists():
            raise RuntimeError("locust wrote no result (is locust installed?)")
        data = json.loads(out.read_text())
        data.setdefault("failures", 0)
        return data


def _client(kind: str, url: str, op: str) -> dict[str, float]:
    if kind == "locust":
        return _locust(url, op, LOCUST_SECONDS)
    cmd = [sys.executable, "-m", "swift_dss.loadgen.bench", kind, url, op, str(REQUESTS)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"bench client {kind} failed: {res.stderr.strip()[-500:]}")
    return json.loads(res.stdout)


def _prepare(url: str) -> None:
    conn = http.client.HTTPConnection(url.removeprefix("http://").split(":")[0],
                                      int(url.rsplit(":", 1)[1]), timeout=30)  # fmt: skip
    for op in ("g", "p"):
        for i in range(256):
            conn.request("PUT", f"/v1/AUTH_test/bench/obj/{op}{i}", body=bytes(SIZE))
            conn.getresponse().read()
    conn.close()


def run(out: Path, rounds: int = 3, progress: Callable[[str], None] = print) -> list[Figure]:
    out.mkdir(parents=True, exist_ok=True)
    server = subprocess.Popen(
        [sys.executable, "-m", "swift_dss.loadgen.localserver", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{server.stdout.readline().strip()}"
        _prepare(url)
        rates: dict[tuple[str, str], list[float]] = {}
        raw = []
        kinds = ["ours", "locust", "threads"]
        for r in range(rounds):
            for op in ("get", "put"):
                for kind in kinds if r % 2 == 0 else kinds[::-1]:
                    res = _client(kind, url, op)
                    if res["failures"]:
                        raise RuntimeError(f"{kind} {op}: {res['failures']} failed requests")
                    rate = res["requests"] / res["cpu_s"]
                    rates.setdefault((kind, op), []).append(rate)
                    raw.append({"round": r, "client": kind, "op": op, **res, "per_cpu_s": rate})
                    progress(f"round {r + 1}/{rounds} {op} {kind}: {rate:.0f} requests/CPU-s")
        (out / "loadgen-clients.json").write_text(json.dumps(raw, indent=1) + "\n")
        med = {k: statistics.median(v) for k, v in rates.items()}
        label = f"{SIZE // 1024}KiB"
        return [
            Figure(
                f"{op.upper()} {label} vs {name}",
                med[("ours", op)],
                med[(kind, op)],
                "requests/CPU-s",
                goal=goal,
                ci=ratio_ci(rates[("ours", op)], rates[(kind, op)]),
            )
            # The aim is 3x Locust; the plain loop is a reference point.
            for kind, name, goal in (
                ("locust", "Locust FastHttpUser", 3.0),
                ("threads", "threaded http.client", None),
            )
            for op in ("get", "put")
        ]
    finally:
        children.stop(server)


if __name__ == "__main__":
    kind, url, op, n = sys.argv[1:5]
    fn = {"ours": client_ours, "threads": client_threads}[kind]
    print(json.dumps(fn(url, op, int(n))))
