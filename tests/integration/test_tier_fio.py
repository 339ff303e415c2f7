"""fio, the I/O tester storage people reach for, checks what the tier returns: every block
it writes carries a checksum and a header naming its offset, and fio reads each back.
Jobs on a cache far smaller than what they write, so that blocks are evicted, written
back and written around while they are verified: buffered, direct, mmap and vectored
I/O, reads mixed into the writes, fsyncs, fallocate; then files written and fsynced,
the daemon killed, the tier mounted again and every block read back against its
checksum, in each mode."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.integration.tier_helpers import (  # noqa: F401
    MakeTier,
    Tier,
    make_tier,
    tiers,
    tmpfs,
)

pytestmark = pytest.mark.integration

MODES = ["hdd", "ssd", "lru", "dss", "tiered"]
#: Each job writes this much per file, three files per job: far over the cache.
SIZE = "12m"
CACHE = "2MiB"
#: What DURABLE writes: three jobs of three files each.
DURABLE_BYTES = 3 * 3 * (12 << 20)

LIVE = """
[global]
size={size}
verify=crc32c
verify_fatal=1
do_verify=1
numjobs=3
[mmap]
ioengine=mmap
rw=randwrite
bsrange=1k-64k
[direct]
ioengine=psync
direct=1
rw=randwrite
bs=4k
[mixed]
ioengine=psync
rw=randrw
rwmixread=30
bsrange=512-32k
verify_backlog=64
[fallocated]
ioengine=psync
fallocate=truncate
rw=write
bs=8k
[vectored]
ioengine=pvsync2
rw=randwrite
bs=16k
fsync=7
"""

DURABLE = """
[global]
size={size}
verify=crc32c
verify_fatal=1
numjobs=3
end_fsync=1
[random]
ioengine=psync
rw=randwrite
bsrange=512-64k
[sequential]
ioengine=psync
rw=write
bs=32k
[direct]
ioengine=psync
direct=1
rw=randwrite
bs=4k
"""


def fio(t: Tier, job: str, *options: str) -> list[dict]:
    """Run the job file JOB in T's mount; return fio's per-job results (each must be
    error-free, and fio must exit 0: a block that fails its checksum fails the job)."""
    path = t.base / "job.fio"
    path.write_text(job.format(size=SIZE))
    command = ["fio", str(path), f"--directory={t.mnt}", "--output-format=json", *options]
    # fio saves its verify state in the working directory: keep it in the test's.
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=600, check=False, cwd=t.base
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    jobs = json.loads(done.stdout[done.stdout.index("{") :])["jobs"]
    assert [j["jobname"] for j in jobs if j["error"]] == []
    return jobs


@pytest.mark.parametrize("mode", MODES)
def test_every_block_fio_writes_reads_back_as_written(make_tier: MakeTier, mode: str) -> None:  # noqa: F811
    t = make_tier()
    t.mount(cache_size=CACHE, mode=mode)
    jobs = fio(t, LIVE)
    # Every job verified what it wrote: a read for each written byte.
    for j in jobs:
        assert j["read"]["io_bytes"] >= j["write"]["io_bytes"] > 0, j["jobname"]
    t.umount()


@pytest.mark.parametrize("mode", MODES)
def test_what_fio_fsynced_survives_a_kill_of_the_daemon(make_tier: MakeTier, mode: str) -> None:  # noqa: F811
    t = make_tier()
    t.mount(cache_size=CACHE, mode=mode)
    written = fio(t, DURABLE, "--do_verify=0")
    assert sum(j["write"]["io_bytes"] for j in written) == DURABLE_BYTES
    t.kill()
    t.mount(cache_size=CACHE, mode=mode)
    verified = fio(t, DURABLE, "--verify_only")
    assert sum(j["read"]["io_bytes"] for j in verified) == DURABLE_BYTES
    t.umount()
