"""rules/crawling/browserhosts.py: which hosts a rendered page's own requests may reach."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tse_scrapy.rules.crawling.browserhosts import NON_PUBLIC_NETWORKS, is_public_address, may_reach

NAMED = {"site.example.org", "127.0.0.1"}


@pytest.mark.parametrize(
    ("host", "addresses", "own", "reached"),
    [
        ("docs.example.org", ["93.184.216.34"], set(), True),
        ("docs.example.org", ["2606:2800:220:1:248:1893:25c8:1946"], set(), True),
        ("10.0.0.5", ["10.0.0.5"], set(), False),
        ("192.168.1.20", ["192.168.1.20"], set(), False),
        ("172.31.255.255", ["172.31.255.255"], set(), False),
        ("100.64.0.1", ["100.64.0.1"], set(), False),  # carrier-grade NAT
        ("169.254.169.254", ["169.254.169.254"], set(), False),  # a cloud's metadata service
        ("0.0.0.0", ["0.0.0.0"], set(), False),
        ("224.0.0.251", ["224.0.0.251"], set(), False),  # multicast (Python calls it global)
        ("255.255.255.255", ["255.255.255.255"], set(), False),
        ("[::1]", ["::1"], set(), False),
        ("[fd00::1]", ["fd00::1"], set(), False),
        ("[fe80::1]", ["fe80::1%eth0"], set(), False),
        ("[::ffff:127.0.0.1]", ["::ffff:127.0.0.1"], set(), False),
        ("[ff02::1]", ["ff02::1"], set(), False),
        ("localhost", ["127.0.0.1", "::1"], set(), False),
        ("localhost", ["127.0.0.1", "::1"], {"127.0.0.1", "::1"}, True),  # a prefix host's addresses
        ("localhost", ["127.0.0.1", "::1"], {"127.0.0.1"}, False),  # ::1 is not
        ("127.0.0.2", ["127.0.0.2"], {"127.0.0.1"}, False),
        ("intranet.example.org", ["93.184.216.34", "192.168.1.2"], set(), False),  # one is private
        ("nowhere.invalid", [], set(), False),  # not resolved
        ("site.example.org", [], set(), True),  # named: whatever it resolves to
        ("SITE.example.org", ["10.0.0.1"], set(), True),
        ("127.0.0.1", ["127.0.0.1"], set(), True),  # named (another port of the prefix's host)
        ("odd.example.org", ["not an address"], set(), False),
    ],
)
def test_may_reach(host, addresses, own, reached):
    assert may_reach(host, addresses, NAMED, own) is reached


def _not_the_internets(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """What Python's ipaddress says of an address that is a host's own network's, or no unicast one."""
    mapped = getattr(address, "ipv4_mapped", None)
    return any(
        (
            not address.is_global,
            address.is_private,
            address.is_loopback,
            address.is_link_local,
            address.is_multicast,
            address.is_reserved,
            address.is_unspecified,
            getattr(address, "is_site_local", False),
            mapped is not None and _not_the_internets(mapped),
        )
    )


@given(st.ip_addresses())
def test_no_address_python_calls_not_global_is_public(address):
    if _not_the_internets(address):
        assert not is_public_address(address)
    assert is_public_address(str(address)) is is_public_address(address)


@given(st.sampled_from(NON_PUBLIC_NETWORKS), st.integers(min_value=0))
def test_every_address_of_the_table_is_refused_unless_a_prefix_hosts(network, offset):
    address = network[offset % network.num_addresses]
    assert not may_reach(str(address), [str(address)], set(), set())
    assert may_reach(str(address), [str(address)], set(), {str(address)})
