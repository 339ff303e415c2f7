"""Swift's own functional tests against all-in-one clusters: the test/ tree of the installed
release's sdist (which `make setup` extracts into .venv/swift-tests), the test.conf and
accounts those tests expect, their pytest runs in subprocesses and the outcomes of their JUnit
reports."""

from __future__ import annotations

import importlib.metadata
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import requests

from swift_dss.deploy.saio import Saio

ROOT = Path(__file__).resolve().parents[2]
#: The directory holding Swift's test/ package; the runs' working directory, so that
#: `import test.functional` finds it before the standard library's `test`.
TREE = Path(os.environ.get("DSS_SWIFT_TESTS") or ROOT / ".venv" / "swift-tests")

#: tempauth users of Swift's test/sample.conf: test:tester and test2:tester2 administer
#: their accounts, test:tester2 is the second S3 owner, test:tester3 may do nothing by
#: itself (the ACL tests grant it access). admin:admin, the reseller admin, is account6.
USERS = {
    "test:tester": "testing .admin",
    "test:tester2": "testing2 .admin",
    "test:tester3": "testing3",
    "test2:tester2": "testing2 .admin",
    "admin:admin": "admin .admin .reseller_admin",
}
#: Users whose account must exist before the tests start (see `create_accounts`).
_OWNERS = ("test:tester", "test2:tester2", "admin:admin")

_FUNC_TEST = """\
[func_test]
auth_uri = {proxy}/auth/v1.0
account = test
username = tester
password = testing
s3_access_key = test:tester
s3_secret_key = testing
account2 = test2
username2 = tester2
password2 = testing2
username3 = tester3
password3 = testing3
s3_access_key2 = test:tester2
s3_secret_key2 = testing2
s3_access_key3 = test:tester3
s3_secret_key3 = testing3
account6 = admin
username6 = admin
password6 = admin
collate = C
insecure = no
"""

#: Worst first: a test reported twice (a failing call, then an error in its teardown)
#: counts as its worst outcome.
_RANK = {"failed": 0, "skipped": 1, "passed": 2}


def tree_problem() -> str | None:
    """Why TREE cannot be used, if it cannot: missing, or another release's tests."""
    version = importlib.metadata.version("swift")
    stamp = TREE / "VERSION"
    if not (TREE / "test" / "functional" / "__init__.py").exists() or not stamp.exists():
        return f"Swift's functional tests are not in {TREE} (make setup)"
    if (found := stamp.read_text().strip()) != version:
        return (
            f"{TREE} holds the tests of Swift {found}, the venv has Swift {version} "
            "(rm .venv/.swift-tests-stamp; make setup)"
        )
    return None


def write_test_conf(cluster: Saio, path: Path) -> Path:
    path.write_text(_FUNC_TEST.format(proxy=cluster.proxy_url))
    return path


def create_accounts(cluster: Saio) -> None:
    """Swift's in-process setup creates AUTH_test and AUTH_test2 before any test; on a real
    cluster an account exists only from its first write, and until then a HEAD of it
    answers 200 where the tests expect an account's 204."""
    session = requests.Session()
    for user in _OWNERS:
        key = USERS[user].split()[0]
        auth = session.get(
            cluster.auth_url, headers={"X-Auth-User": user, "X-Auth-Key": key}, timeout=30
        )
        assert auth.status_code == 200, f"{user}: {auth.status_code} {auth.text}"
        url = f"{auth.headers['X-Storage-Url']}/swift-functional-setup"
        token = {"X-Auth-Token": auth.headers["X-Auth-Token"]}
        for method, ok in (("PUT", (201, 202)), ("DELETE", (204,))):
            resp = session.request(method, url, headers=token, timeout=30)
            assert resp.status_code in ok, f"{method} {url}: {resp.status_code} {resp.text}"


@dataclass
class Run:
    """One cluster's run: each test's outcome (passed, skipped, failed) and its failure's or
    skip's first line, by test id (module.Class::test)."""

    name: str
    returncode: int
    log: Path
    outcomes: dict[str, str] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)

    def counts(self) -> Counter[str]:
        return Counter(self.outcomes.values())

    def having(self, outcome: str) -> set[str]:
        return {t for t, o in self.outcomes.items() if o == outcome}

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def read_junit(run: Run, report: Path) -> None:
    if not report.exists():
        return
    for case in ET.parse(report).getroot().iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, message = "failed", child.get("message") or child.text or ""
                break
            if child.tag == "skipped":
                outcome, message = "skipped", child.get("message") or ""
        if test in run.outcomes and _RANK[run.outcomes[test]] <= _RANK[outcome]:
            continue
        run.outcomes[test] = outcome
        run.messages[test] = (message.strip().splitlines() or [""])[0][:300]


def _env(conf: Path) -> dict[str, str]:
    # The outer pytest's variables and any SWIFT_TEST_* of the caller's shell would steer
    # the inner run (in-process servers, another config, a policy).
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SWIFT_TEST_", "PYTEST_")) and k != "PYTHONPATH"
    }
    env.update(SWIFT_TEST_CONFIG_FILE=str(conf), SWIFT_TEST_IN_PROCESS="false")
    return env


def run_all(
    confs: dict[str, Path], modules: list[str], out: Path, timeout: float
) -> dict[str, Run]:
    """Swift's MODULES against every cluster at once (name -> its test.conf), each run a
    pytest of its own in its own process group, killed if it outlives TIMEOUT or the
    caller. At once, because the runs mostly wait on the servers: one after the other
    takes half as long again on two cores."""
    procs: dict[str, subprocess.Popen[bytes]] = {}
    runs: dict[str, Run] = {}
    try:
        for name, conf in confs.items():
            log = out / f"{name}.log"
            cmd = [
                sys.executable,
                "-m",
                "pytest",
                *("-c", os.devnull, "--rootdir", str(TREE), "-p", "no:cacheprovider"),
                *("-q", "-rfE", "--timeout", "300", f"--junitxml={out / f'{name}.xml'}"),
                *modules,
            ]
            with open(log, "wb") as sink:
                procs[name] = subprocess.Popen(
                    cmd,
                    cwd=TREE,
                    env=_env(conf),
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            runs[name] = Run(name, -1, log)
        deadline = time.monotonic() + timeout
        for name, proc in procs.items():
            runs[name].returncode = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            read_junit(runs[name], out / f"{name}.xml")
        return runs
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
