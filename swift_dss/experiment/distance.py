"""`dss experiment sweep`: the Hou et al. parallelism x request-size study through an
emulated client link, for each client case (a link rate and a round-trip time).

Hou et al. measured Amazon S3 from EC2 clients: "Baseline" in the same Oregon data
center as the service (RTT 0.28 ms) and "GEO-Sydney" across the Pacific (RTT 176 ms), and
found that a long distance lowers small requests' peak bandwidth (a long RTT needs more
parallelism than the client's CPU can drive) but hardly that of large ones. Here each case
runs on a fresh emulated testbed (`--testbed netns` without device models: the study is
of the client and the link, as S3's storage was never its bottleneck) whose client link
is shaped to the case's rate, with a relay on the client node adding the case's RTT
(`swift_dss/testbed/relay.py`; the kernel has no netem). `dss loadgen sweep` runs on the
client node over S3 (s3api), as the study's tool did, and writes its tables and plots per
case; this writes `summary.json`, `report.md` and `peak.png` (the study's Figs. 10:
peak bandwidth per size, one line per case).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from swift_dss import children
from swift_dss.deploy.local_cluster import LocalCluster, LocalClusterConfig
from swift_dss.deploy.local_cluster_config import ClusterError
from swift_dss.experiment import hou
from swift_dss.experiment.cluster import ExperimentError
from swift_dss.testbed.settings import TestbedSettings
from swift_dss.testbed.shaping import ShapingError, parse_rate


@dataclass(frozen=True)
class Case:
    name: str
    rate: str  # the client link, e.g. "1gbit"
    rtt_ms: float

    def validate(self) -> None:
        try:
            parse_rate(self.rate)
        except ShapingError as err:
            raise ExperimentError(f"case {self.name}: {err}") from None
        if not 0 <= self.rtt_ms <= 10_000:
            raise ExperimentError(f"case {self.name}: RTT {self.rtt_ms:g} ms is outside 0-10000")


#: The study's Baseline and GEO-Sydney clients (RTTs from its section IV-C). The link rate
#: stands for an EC2 instance's network of the time ("High", about 1 Gbit/s).
CASES = (Case("baseline", "1gbit", 0.28), Case("long-distance", "1gbit", 176.0))


def parse_case(text: str) -> Case:
    """NAME:RATE:RTT_MS, e.g. ``sydney:1gbit:176``."""
    parts = text.split(":")
    if len(parts) != 3:
        raise ExperimentError(f"{text!r}: a case is NAME:RATE:RTT_MS, e.g. sydney:1gbit:176")
    try:
        case = Case(parts[0], parts[1], float(parts[2]))
    except ValueError:
        raise ExperimentError(f"{text!r}: RTT {parts[2]!r} is not a number of ms") from None
    case.validate()
    return case


@contextlib.contextmanager
def testbed_for(directory: Path, case: Case) -> Iterator[LocalCluster]:
    """A testbed whose client link is CASE's, with plain devices (no tier, no models)."""
    cfg = LocalClusterConfig(
        dir=directory,
        nodes=4,
        replicas=3,
        tier_mode=None,
        dssio_backend="none",
        devices_size="4g",
        testbed=TestbedSettings(client_rate=case.rate),
    )
    cluster = LocalCluster(cfg)
    try:
        cluster.up()
    except ClusterError as err:
        raise ExperimentError(f"the testbed did not come up: {err}") from None
    try:
        yield cluster
    finally:
        cluster.down(timeout=60)


@contextlib.contextmanager
def relay(cluster: LocalCluster, rtt_ms: float) -> Iterator[str]:
    """The RTT relay on the client node for the duration; yields the endpoint to use."""
    target = f"{cluster.proxy_ip}:{cluster.proxy_port}"
    cmd = cluster.client_command(
        [sys.executable, "-m", "swift_dss.testbed.relay", "127.0.0.1:0", target, f"{rtt_ms:g}"]
    )
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().split()
        if len(line) != 2 or line[0] != "ready":
            raise ExperimentError(f"the RTT relay did not start (exit {proc.poll()})")
        yield f"http://127.0.0.1:{line[1]}"
    finally:
        children.stop(proc)


def check_sweep_args(out: Path, cases: tuple[Case, ...], sweep_args: list[str]) -> None:
    """Refuse arguments `dss loadgen sweep` would refuse before any testbed starts: it
    checks them only after one is up, once per case."""
    import click

    from swift_dss.loadgen.cli import check_sweep_args as check

    fixed = sweep_options("http://127.0.0.1:8080", "user", "key", out / cases[0].name)
    try:
        check(sweep_args, fixed)
    except click.ClickException as err:
        raise ExperimentError(
            f"the arguments for dss loadgen sweep: {err.format_message()}"
        ) from None


def sweep_options(endpoint: str, user: str, key: str, case_dir: Path) -> list[str]:
    """The `dss loadgen sweep` options each case sets itself."""
    return ["--protocol", "s3", "--endpoint", endpoint, "--access-key", user,
            "--secret-key", key, "--out", str(case_dir)]  # fmt: skip


def run_case(case: Case, out: Path, sweep_args: list[str], console: Console) -> dict[str, Any]:
    case_dir = out / case.name
    with (
        testbed_for(out / "clusters" / case.name, case) as cluster,
        relay(cluster, case.rtt_ms) as endpoint,
    ):
        console.print(f"{case.name}: client link {case.rate}, RTT {case.rtt_ms:g} ms, {endpoint}")
        dss = str(Path(sys.executable).parent / "dss")
        options = sweep_options(endpoint, cluster.user, cluster.key, case_dir)
        cmd = cluster.client_command([dss, "loadgen", "sweep", *options, *sweep_args])
        done = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        if done.returncode != 0:
            raise ExperimentError(f"{case.name}: the sweep exited {done.returncode}")
    return json.loads((case_dir / "results.json").read_text())


def sweep_distance(
    out: Path, cases: tuple[Case, ...], sweep_args: list[str], console: Console
) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    docs = {}
    started = time.time()
    for n, case in enumerate(cases, 1):
        console.rule(f"[{n}/{len(cases)}] {case.name}")
        docs[case.name] = run_case(case, out, sweep_args, console)
    summary = {
        "experiment": "sweep",
        "cases": [asdict(c) for c in cases],
        "peak": {
            name: {
                op: {str(s): r["mbps"] for s, r in sorted(hou.peak_by_size(doc, op).items())}
                for op in doc["ops"]
            }
            for name, doc in docs.items()
        },
        "best": {name: doc["best"] for name, doc in docs.items()},
        # The first case stands for the study's Baseline client, the second for Sydney.
        "study": hou.compare(docs, cases[0].name, cases[1].name if len(cases) > 1 else ""),
        "wall_s": round(time.time() - started, 1),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    write_report(out, summary, docs)
    return summary


def write_report(out: Path, summary: dict[str, Any], docs: dict[str, dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from swift_dss.sizes import format_size

    ops = sorted({op for p in summary["peak"].values() for op in p})
    fig, axes = plt.subplots(1, len(ops), figsize=(6 * len(ops), 4.2), squeeze=False)
    md = [
        "# Parallelism and request size through an emulated client link (Hou et al.)",
        "",
        "Each case ran `dss loadgen sweep` over S3 on the testbed's client node, its link "
        "shaped to the case's rate and a relay adding the case's RTT. Per case, its own "
        "tables and plots are in `<case>/` (bandwidth, mean latency and client CPU for "
        "every parallelism and size).",
        "",
        "| case | client link | RTT ms |",
        "|---|---|---:|",
        *(f"| {c['name']} | {c['rate']} | {c['rtt_ms']:g} |" for c in summary["cases"]),
        "",
        "## Peak bandwidth per request size (the study's Fig. 10)",
        "",
        "![peak](peak.png)",
        "",
    ]
    for ax, op in zip(axes[0], ops, strict=True):
        sizes = sorted({int(s) for p in summary["peak"].values() for s in p.get(op, {})})
        md += [
            f"{op.upper()} MB/s, best parallelism in brackets:",
            "",
            "| size | " + " | ".join(summary["peak"]) + " |",
            "|---|" + "---:|" * len(summary["peak"]),
        ]
        for s in sizes:
            cells = []
            for name in summary["peak"]:
                r = hou.peak(docs[name], op, s)
                cells.append("-" if r is None else f"{r['mbps']:.2f} (x{r['parallelism']})")
            md.append(f"| {format_size(s)} | " + " | ".join(cells) + " |")
        md.append("")
        for name, peaks in summary["peak"].items():
            xs = sorted(int(s) for s in peaks.get(op, {}))
            ax.plot(xs, [peaks[op][str(s)] for s in xs], marker="o", label=name)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("request size (bytes)")
        ax.set_ylabel("peak bandwidth (MB/s)")
        ax.set_title(op.upper())
        ax.legend()
    fig.tight_layout()
    fig.savefig(out / "peak.png", dpi=100)
    plt.close(fig)
    md += hou.markdown(summary["study"])
    (out / "report.md").write_text("\n".join(md))
