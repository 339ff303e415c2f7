"""Python's one way to drive the dss-tier binary (tier/, docs/tier.md).

    binary   where the binary is, and why it cannot run
    options  the options of `dss-tier mount`, and the sizes its --cache-size takes
    daemon   a mount's daemon: start it, wait for its mount, settle, stop, kill, unmount
    report   `dss-tier stats --json` and `dss-tier dump --json` as typed results
    fsck     `dss-tier fsck` of an unmounted cache

Every failure is a `TierError` with a one-line explanation.
"""

from swift_dss.tierctl.errors import TierError

__all__ = ["TierError"]
