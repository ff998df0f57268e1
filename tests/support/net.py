"""Ports for the servers the tests and benchmarks start on 127.0.0.1."""

import socket


def free_port() -> int:
    """A port nothing listens on now, on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
