"""Who a shared server's limits are counted for (core.infra.clients): the connection's address, an IPv6 /64 as
one client, X-Forwarded-For only through the proxies the operator names, and never what a client wrote itself."""

from __future__ import annotations

import pytest

from core.infra.clients import client_address, client_key, trusted_networks
from core.infra.errors import ConfigError
from core.server_config import load_server_config


def test_without_a_named_proxy_the_connection_is_the_client():
    assert client_address("203.0.113.7", [], []) == "203.0.113.7"
    # a header nobody vouches for changes nothing: each new claim would otherwise be a new allowance
    assert client_address("203.0.113.7", ["198.51.100.1"], []) == "203.0.113.7"
    assert client_address("10.0.0.5", ["198.51.100.2, 198.51.100.3"], []) == "10.0.0.5"  # an unnamed proxy: one
    assert client_address(None, [], []) is None


def test_a_named_proxy_gives_way_to_the_address_it_saw_and_no_further():
    proxy = trusted_networks(["10.0.0.5"])
    assert client_address("10.0.0.5", ["203.0.113.7"], proxy) == "203.0.113.7"
    # the client wrote "1.2.3.4" itself; the proxy appended the address it really saw
    assert client_address("10.0.0.5", ["1.2.3.4, 203.0.113.7"], proxy) == "203.0.113.7"
    assert client_address("10.0.0.5", ["1.2.3.4", "203.0.113.7"], proxy) == "203.0.113.7"  # two header lines
    # a client that reaches the server directly cannot claim another address
    assert client_address("203.0.113.7", ["1.2.3.4"], proxy) == "203.0.113.7"
    chain = trusted_networks(["10.0.0.0/8"])
    assert client_address("10.0.0.5", ["1.2.3.4, 203.0.113.9, 10.2.0.1"], chain) == "203.0.113.9"


def test_an_ipv6_subscriber_is_one_client_whatever_its_address():
    assert client_key("2001:db8:1:2::1") == client_key("2001:db8:1:2:ffff:ffff:ffff:ffff") == "2001:db8:1:2::/64"
    assert client_key("2001:db8:1:3::1") != client_key("2001:db8:1:2::1")
    assert client_key("::ffff:203.0.113.7") == client_key("203.0.113.7") == "203.0.113.7"


def test_the_operator_names_the_proxies(tmp_path):
    none = tmp_path / "none.toml"
    assert load_server_config(none, {}).trusted_proxies == []
    env = {"CHUNKLENS_TRUSTED_PROXIES": "127.0.0.1, 10.0.0.0/8"}
    assert load_server_config(none, env).trusted_proxies == ["127.0.0.1", "10.0.0.0/8"]
    with pytest.raises(ConfigError, match="trusted_proxies.*'nginx' is not an IP address or network"):
        load_server_config(none, {"CHUNKLENS_TRUSTED_PROXIES": "nginx"})
