"""The one exception the dss-tier face raises."""

from __future__ import annotations


class TierError(Exception):
    """A dss-tier command that failed or cannot run, with a one-line explanation."""
