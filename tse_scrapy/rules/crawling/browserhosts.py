"""Which hosts a rendered page's own requests (``--render``: its scripts, styles, frames, the JSON
its scripts fetch) may reach: the crawl's own hosts, and public ones.

A page is anyone's: a script on a public page that names ``http://10.0.0.5:8080/admin`` or
``http://127.0.0.1:6379/`` would make the crawler contact a host of its own network (its robots.txt
first, then the URL).  So a host outside the crawl's named hosts (its prefixes', its seeds',
``TSE_RENDER_HOSTS``) is reached only when every address it has is public, or is the address of a
prefix's host (a site on 127.0.0.1:8000 may load its scripts from 127.0.0.1:9000, not from
127.0.0.2).  A name that does not resolve is not reached either: what it is cannot be known.

=============================  ====================================  ===========================
host                           its addresses                         reached
=============================  ====================================  ===========================
``docs.example.org``           93.184.216.34                         yes: public
``10.0.0.5``                   10.0.0.5                              no: private
``localhost``                  127.0.0.1, ::1                        no (yes when a prefix's
                                                                     host is 127.0.0.1 and ::1)
``intranet.example.org``       93.184.216.34, 192.168.1.2            no: one is private
``169.254.169.254``            169.254.169.254                       no: link-local
``nowhere.invalid``            (none)                                no: not resolved
a prefix's host                anything                              yes: named
=============================  ====================================  ===========================
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection, Iterable

# Every address outside these is public.  IPv4: this network, private, shared (carrier-grade NAT),
# loopback, link-local, IETF protocol assignments, documentation, the 6to4 relay, benchmarking,
# multicast, reserved and broadcast.  IPv6: everything outside global unicast (2000::/3: loopback,
# unspecified, IPv4-mapped, NAT64, discard, unique-local, link-local, site-local, multicast,
# reserved), and in it the IETF protocol assignments (Teredo among them), 6to4 (it may carry a
# private IPv4 address), and documentation.  Python's ipaddress is the witness (tests: no address
# outside these is one it calls not global, private, multicast, reserved ...).
NON_PUBLIC_NETWORKS = tuple(
    ipaddress.ip_network(network)
    for network in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.88.99.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "::/3",
        "4000::/2",
        "8000::/1",
        "2001::/23",
        "2001:db8::/32",
        "2002::/16",
        "3fff::/20",
    )
)


def ip_literal(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """*host* (a URL's, an IPv6 address with or without its brackets) as an address, or None for a name."""
    try:
        return ipaddress.ip_address(host.strip("[]").split("%")[0])
    except ValueError:
        return None


def is_public_address(address: str | ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether *address* is one of the Internet's, not of a host's own network (NON_PUBLIC_NETWORKS)."""
    if isinstance(address, str):
        parsed = ip_literal(address)
        if parsed is None:
            return False
        address = parsed
    return not any(address in network for network in NON_PUBLIC_NETWORKS)


def canonical_addresses(addresses: Iterable[str]) -> frozenset[str]:
    """*addresses* as Python writes them (``::1``, not ``0:0::1``), those that are not addresses left out."""
    found = (ip_literal(address) for address in addresses)
    return frozenset(str(address) for address in found if address is not None)


def may_reach(
    host: str, addresses: Collection[str], named_hosts: Collection[str], own_addresses: Collection[str]
) -> bool:
    """Whether a rendered page's request may go to *host*, which resolves to *addresses* (an address
    itself, for an IP literal; none, when it did not resolve): one of the crawl's *named_hosts*
    (lower case), or a host whose every address is public or one of *own_addresses* (those of the
    crawl's prefix hosts, canonical)."""
    if host.lower().strip("[]") in named_hosts:
        return True
    found = [ip_literal(address) for address in addresses]
    if not found or None in found:  # nothing known, or not an address
        return False
    return all(str(address) in own_addresses or is_public_address(address) for address in found)
