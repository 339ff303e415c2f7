"""Time dilation, after DieCast (Gupta et al., NSDI 2007): a testbed run K times slower in
every resource, with every timeout K times longer, behaves as the full-speed testbed would,
on a machine that could not keep up with the full speed.

One factor K does all of it: each link rate is divided by K, each device model is made K
times slower (dss-tier's model parameter `dilation=K`), each timeout is multiplied by K.
A time measured in the dilated testbed is divided by K, a bandwidth multiplied by K, to
read it at the real testbed's scale.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Beyond this a run would take hours for seconds of emulated time.
MAX_FACTOR = 1000


class DilationError(ValueError):
    """A dilation factor or model string that cannot be used, with a one-line reason."""


@dataclass(frozen=True)
class Dilation:
    #: A whole number, as dss-tier's models take it. Below 1 the machine would have to run
    #: faster than the testbed it emulates, which is what dilation exists to avoid.
    factor: int = 1

    def __post_init__(self) -> None:
        k = self.factor
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_FACTOR:
            raise DilationError(
                f"the time dilation factor must be a whole number from 1 to {MAX_FACTOR}, not {k!r}"
            )

    def rate(self, bits_per_second: int) -> int:
        """A link rate as the dilated testbed runs it (at least 8 bit/s, one byte a second)."""
        if bits_per_second <= 0:
            raise DilationError(f"a link rate must be positive, not {bits_per_second}")
        return max(8, round(bits_per_second / self.factor))

    def timeout(self, seconds: float) -> float:
        return seconds * self.factor

    def real_seconds(self, measured: float) -> float:
        """A duration measured in the dilated testbed, at the real testbed's scale."""
        return measured / self.factor

    def real_rate(self, measured: float) -> float:
        """A bandwidth measured in the dilated testbed, at the real testbed's scale."""
        return measured * self.factor

    def model(self, spec: str) -> str:
        """A dss-tier device model string K times slower: `intel710` -> `intel710:dilation=K`,
        `intel710:read_mbps=300` -> `intel710:read_mbps=300,dilation=K`. `none` (a real
        device, which nothing slows) and K = 1 leave the string as it is."""
        dilated = with_override(spec, "dilation", str(self.factor))
        return spec if self.factor == 1 else dilated


def with_override(spec: str, key: str, value: str) -> str:
    """A dss-tier device model string with `key=value` added to its overrides; `none` (a
    real device, which no model parameter applies to) is left as it is."""
    name, _, overrides = spec.partition(":")
    if not name:
        raise DilationError(f"device model {spec!r} has no profile name")
    keys = [kv.partition("=")[0] for kv in overrides.split(",") if kv]
    if key in keys:
        raise DilationError(f"device model {spec!r} sets {key} itself")
    if name == "none":
        return spec
    return f"{spec},{key}={value}" if keys else f"{name}:{key}={value}"
