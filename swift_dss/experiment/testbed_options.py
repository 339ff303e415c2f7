"""The experiments' testbed options (--testbed, --dilation, the link rates, the device
models, ...), handed to a command as one `Testbed`."""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import click

from swift_dss.experiment.scale import TESTBED_DEFAULT
from swift_dss.testbed import congestion
from swift_dss.testbed.settings import TESTBED_HDD, TestbedSettings
from swift_dss.testbed.shaping import MIN_BURSTS
from swift_dss.tierctl.options import META_WRITES

if TYPE_CHECKING:
    from swift_dss.experiment.targets import TestbedDefaults

#: The settings the options below override when given, by TestbedSettings field name.
SETTINGS = (
    "client_rate",
    "proxy_rate",
    "storage_rate",
    "ssd_model",
    "hdd_model",
    "meta_memory",
    "meta_writes",
    "link_queue_ms",
    "link_burst",
    "tcp_congestion",
    "tcp_rto_min_ms",
    "conn_timeout",
    "error_limit",
)
#: The options a saio run refuses, named from SETTINGS so that a new setting joins them.
_NETNS_FLAGS = [
    "--dilation",
    "--rate-scale",
    "the link rates",
    *(f"--{m.replace('_', '-')}" for m in SETTINGS if not m.endswith("_rate")),
]
NETNS_ONLY = ", ".join(_NETNS_FLAGS[:-1]) + f" and {_NETNS_FLAGS[-1]}"


def testbed_options(f: Any, defaults: TestbedDefaults) -> Any:
    """--testbed, --dilation, --rate-scale, --repeats and the settings' options, handed to
    the command as one ``testbed`` (a `Testbed`, DEFAULTS where the options leave it
    unsaid) and ``repeats`` (None: the testbed's default)."""

    @functools.wraps(f)
    def with_testbed(*args: Any, **kwargs: Any) -> Any:
        from swift_dss.experiment.targets import Testbed

        kind, k = kwargs.pop("testbed_kind"), kwargs.pop("dilation")
        rate_scale = kwargs.pop("rate_scale")
        given = {m: kwargs.pop(m) for m in SETTINGS}
        given = {m: value for m, value in given.items() if value is not None}
        if kind == "saio" and (k is not None or rate_scale is not None or given):
            raise click.BadParameter(f"{NETNS_ONLY} are the emulated testbed's (netns)")
        settings = None
        if kind == "netns":
            scale_args = kwargs["scale_args"]
            if rate_scale is None:
                sizes = scale_args.size_scale or TESTBED_DEFAULT.size_scale
                rate_scale = defaults.rate_scale(sizes)
            # On the testbed --workers is each storage server's (the proxy keeps its own).
            workers = scale_args.workers
            base = Testbed("netns").settings or TestbedSettings()
            settings = replace(
                base,
                dilation=k or defaults.dilation,
                rate_scale=rate_scale,
                server_workers=defaults.server_workers if workers is None else workers,
                **given,
            )
            try:
                settings.validate()
                congestion.check(settings.tcp_congestion)
            except (ValueError, congestion.CongestionError) as err:
                raise click.BadParameter(str(err)) from err
        return f(*args, testbed=Testbed(kind, settings), **kwargs)

    follow = "the object size scale" if defaults.rates_follow_sizes else "1"
    options = [
        click.option(
            "--testbed",
            "testbed_kind",
            type=click.Choice(["saio", "netns"]),
            default="netns",
            show_default=True,
            help="netns: the paper's testbed emulated (client, proxy and 4 storage nodes in "
            "network namespaces, shaped links, time dilated); saio: the all-in-one "
            "cluster, a quick mode",
        ),
        click.option(
            "--dilation",
            type=click.IntRange(1, 1000),
            default=None,
            help="time dilation factor K of the emulated testbed (links K times slower, "
            "devices K times slower, timeouts K times longer)  "
            f"[default: {defaults.dilation}]",
        ),
        click.option(
            "--rate-scale",
            type=float,
            default=None,
            help="multiply every link rate and device transfer rate by this, in (0, 1], "
            "before dilation; with the object size scale, a scaled object takes as long "
            "to move as the full-size one on the paper's hardware, and bandwidths are read "
            f"at the full sizes  [default: {follow}]",
        ),
        *(
            click.option(
                f"--{role}-rate",
                default=None,
                help=f"the {role} {what}, before the rate scale and dilation, as tc "
                f"writes rates (10gbit, 500mbit)  [default: {default}]",
            )
            for role, what, default in (
                ("client", "node's link", TestbedSettings.client_rate),
                ("proxy", "node's link", TestbedSettings.proxy_rate),
                ("storage", "nodes' links, each", TestbedSettings.storage_rate),
            )
        ),
        click.option(
            "--meta-memory",
            default=None,
            help="memory each storage node keeps file-system metadata in, whose reads then "
            "reach neither the tier's cache nor a device model; 0 for none  "
            f"[default: {TestbedSettings.meta_memory}]",
        ),
        click.option(
            "--meta-writes",
            type=click.Choice(META_WRITES),
            default=None,
            help="how each storage node's tier charges metadata writes: sync, each waits "
            "for its device; buffered, each keeps its device busy but returns at once, and "
            f"an fsync waits for them, as ext4's journal does  [default: "
            f"{TestbedSettings.meta_writes}]",
        ),
        click.option(
            "--error-limit",
            type=int,
            default=None,
            help="the proxy's error_suppression_limit: a node with more errors than this "
            "within error_suppression_interval is left out for that interval; a large "
            f"value leaves none out  [default: Swift's {TestbedSettings.error_limit}]",
        ),
        click.option(
            "--conn-timeout",
            type=float,
            default=None,
            help="Swift's conn_timeout (proxy and object servers), in emulated seconds "
            "(times K): how long the proxy waits for a storage node to accept a connection "
            "or answer Expect: 100-continue before it tries another; below TCP's 1 s SYN "
            "retransmission, one lost SYN costs a request that node  "
            f"[default: {TestbedSettings.conn_timeout:g}, the paper's]",
        ),
        click.option(
            "--tcp-congestion",
            default=None,
            help="every node's TCP congestion control, or '' for the host's default  "
            "[default: cubic, the paper's kernel's and Debian's]",
        ),
        click.option(
            "--tcp-rto-min-ms",
            type=float,
            default=None,
            help="TCP's minimum retransmission timeout on every node, in the emulated "
            "testbed's milliseconds (times K in each namespace), or 0 for the kernel's "
            f"undilated one  [default: {TestbedSettings.tcp_rto_min_ms:g}, Linux's]",
        ),
        click.option(
            "--link-queue-ms",
            type=float,
            default=None,
            help="each link's queue in the emulated testbed's milliseconds (tc's tbf "
            f"latency, times K on the veths)  [default: {TestbedSettings.link_queue_ms:g}]",
        ),
        click.option(
            "--link-burst",
            type=click.Choice(list(MIN_BURSTS)),
            default=None,
            help="each link's smallest tbf bucket: frames (4 Ethernet frames, so the queue is "
            "nearly all the wait of a full link) or gso (128 KiB, earlier records')  "
            f"[default: {TestbedSettings.link_burst}]",
        ),
        *(
            click.option(
                f"--{device}-model",
                default=None,
                help=f"the testbed's dss-tier {device.upper()} model, before dilation "
                f"(docs/tier.md)  [default: {default}]",
            )
            for device, default in (("hdd", TESTBED_HDD), ("ssd", TestbedSettings.ssd_model))
        ),
        click.option(
            "--repeats",
            type=click.IntRange(1, 30),
            default=None,
            help="runs of each configuration; with 2 or more, 95% intervals over the runs, "
            "with 1, over the run's requests (bootstrap)  [default: 1]",
        ),
    ]
    # Applied last to first, so that --help lists them in the order above.
    for option in reversed(options):
        with_testbed = option(with_testbed)
    return with_testbed
