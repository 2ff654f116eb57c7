"""Faults a fleet meets, for real: three instances behind nginx, one shared Redis, and a
bounded load through nginx (tests/support/loadgen.py) while things go wrong.

1. **A plain Redis** (persistence on, as in production). Under load: each instance is
   restarted in turn (SIGTERM: drain, then start again on its port); a slow-body client,
   a stalled reader and hundreds of idle connections go at single instances; then Redis
   is stopped for a few seconds and started again.
   Holds: 0 failed requests across the rolling restart (a new listen stream that
   reaches a draining instance is refused, 503 ``shutting_down``, and opened again by
   its client); stateless requests never fail;
   Store-backed requests fail only while Redis is down (plus a bounded recovery) and
   only with the typed error (503, ``store_unavailable``); listen streams end with that
   error during the outage and with their result (after an SSE ``retry``) when their
   instance drains; every instance logs the outage once; afterwards no keys, tasks or
   file descriptors are left over.
2. **Redis Sentinel** (a primary, a replica, three sentinels; ``wait_replicas=1``).
   Under load, ``SENTINEL FAILOVER``. Holds: the same typed-failures-only rule, recovery
   within a bound, and every session the fleet acknowledged still exists afterwards.
3. **Redis Cluster** (three primaries): an instance serves sessions, listen streams and
   publications through it.

Run with ``-s`` for the figures. Every phase is bounded in time and count.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from tests.integration.conftest import REPO, TEST_STATE_KEYS, nginx_binary
from tests.support.loadgen import (
    LEGACY,
    META,
    Http1,
    Load,
    modern_headers,
    read_head,
)
from tests.support.processes import free_port, require_tool, stop, wait_for_port
from tests.support.redis_topologies import RedisNode, redis_cluster, redis_sentinel

pytestmark = [pytest.mark.integration, pytest.mark.faults]

#: Short limits so that each fault shows within seconds (production defaults differ).
INSTANCE_FLAGS = ["--header-timeout", "2", "--graceful-timeout", "10"]
INSTANCE_ENV = {"MCPCORE_BODY_TIMEOUT": "2", "FAULTS_SEND_TIMEOUT": "2"}
#: How long Store-backed requests may keep failing once Redis is back.
RECOVERY_BOUND = 5.0
#: The nginx directives of docs/deploying.md ("When things fail"), as the test runs them.
LOCATION = """\
proxy_pass http://mcp;
proxy_http_version 1.1;
proxy_set_header Connection "";
proxy_set_header Host $http_host;
proxy_buffering off;
proxy_read_timeout 1h;
proxy_connect_timeout 1s;
proxy_next_upstream error timeout;
"""
UPSTREAM_TAIL = "keepalive 16;\nkeepalive_timeout 4s;\n"
NGINX_CONF = """
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 2048; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    upstream mcp {{
{servers}
{upstream_tail}
    }}
    server {{
        listen 127.0.0.1:{port};
        location /mcp {{
{location}
            add_header X-Upstream $upstream_addr always;
        }}
    }}
}}
"""


# -- the fleet -----------------------------------------------------------------------------
@dataclass
class Instance:
    port: int
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


class FaultFleet:
    """``tests.support.fault_app`` instances behind nginx (the documented directives);
    each can be stopped gracefully and started again on its port."""

    def __init__(self, folder: Path, redis_url: str, size: int = 3) -> None:
        self.folder = folder
        self.env = {**os.environ, "MCPCORE_STATE_KEYS": TEST_STATE_KEYS,
                    "MCPCORE_REDIS_URL": redis_url, **INSTANCE_ENV}
        self.instances = [Instance(free_port(), folder / f"instance-{i}.log")
                          for i in range(size)]
        self.front = free_port()
        self.proxy: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.front}/mcp"

    def start_instance(self, i: int, *, new_port: bool = False) -> None:
        """Start instance ``i`` and check that what answers on its port is it (on a
        shared machine another process may take a port between pick and bind)."""
        instance = self.instances[i]
        for attempt in range(3):
            if new_port and attempt:
                instance.port = free_port()
            with instance.log.open("ab") as log:
                instance.proc = subprocess.Popen(
                    [sys.executable, "-m", "tests.support.fault_app", "--host", "127.0.0.1",
                     "--port", str(instance.port), *INSTANCE_FLAGS],
                    cwd=REPO, env=self.env, stdout=subprocess.PIPE, stderr=log)
            assert instance.proc.stdout is not None
            announced = instance.proc.stdout.readline().decode()
            instance.proc.stdout.close()
            if announced.rstrip().endswith(f"127.0.0.1:{instance.port}"):
                return
            stop(instance.proc)
            if not new_port:
                break
        raise AssertionError(f"instance {i} could not serve on port {instance.port}: "
                             f"{instance.log.read_text(errors='replace')[-1000:]}")

    def restart_instance(self, i: int) -> float:
        """SIGTERM (drain), wait for the exit, start again; seconds it was away."""
        proc = self.instances[i].proc
        assert proc is not None
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
        self.start_instance(i)
        return time.monotonic() - started

    def start(self) -> None:
        nginx = nginx_binary()
        require_tool(nginx is not None, "nginx")
        assert nginx is not None
        for i in range(len(self.instances)):
            self.start_instance(i, new_port=True)
        prefix = self.folder / "nginx"
        prefix.mkdir()
        servers = "\n".join(f"        server 127.0.0.1:{i.port} max_fails=1 fail_timeout=1s;"
                            for i in self.instances)
        (prefix / "nginx.conf").write_text(NGINX_CONF.format(
            prefix=prefix, servers=servers, port=self.front,
            upstream_tail=_indent(UPSTREAM_TAIL, 8), location=_indent(LOCATION, 12)))
        user = ["-g", "daemon off; user root;"] if os.geteuid() == 0 else ["-g", "daemon off;"]
        self.proxy = subprocess.Popen([nginx, "-p", str(prefix), "-c",
                                       str(prefix / "nginx.conf"), *user],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.front, self.proxy)

    def stop(self) -> None:
        if self.proxy is not None:
            self.proxy.send_signal(signal.SIGQUIT)
            try:
                self.proxy.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proxy.kill()
                self.proxy.wait()
        for instance in self.instances:
            if instance.proc is not None and instance.proc.poll() is None:
                stop(instance.proc)

    def logged(self, i: int, needle: str) -> int:
        return self.instances[i].log.read_text(errors="replace").count(needle)


def _indent(text: str, spaces: int) -> str:
    return "".join(" " * spaces + line + "\n" for line in text.splitlines())


@contextlib.contextmanager
def fault_fleet(folder: Path, redis_url: str) -> Iterator[FaultFleet]:
    fleet = FaultFleet(folder, redis_url)
    try:
        fleet.start()
        yield fleet
    finally:
        fleet.stop()


async def debug(instance: Instance) -> dict[str, Any]:
    conn = Http1(f"http://127.0.0.1:{instance.port}/debug")
    try:
        status, _, body = await conn.request("GET", {})
    finally:
        await conn.close()
    assert status == 200, body
    report: dict[str, Any] = json.loads(body)
    return report


def rss(proc: subprocess.Popen[bytes]) -> int:
    for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@contextlib.asynccontextmanager
async def raw_redis(url: str) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(url)
    try:
        yield client
    finally:
        await client.aclose()


# -- figures -------------------------------------------------------------------------------
def summary(title: str, load: Load, **figures: Any) -> str:
    kinds = Counter(o.kind for o in load.outcomes)
    failed = Counter((o.kind, o.result) for o in load.outcomes if not o.ok)
    latencies = sorted(o.latency for o in load.outcomes)
    lines = [f"\n== {title}: {len(load.outcomes)} requests, "
             f"{sum(1 for o in load.outcomes if not o.ok)} failed, p50 "
             f"{latencies[len(latencies) // 2] * 1000:.1f} ms, max "
             f"{latencies[-1] * 1000:.0f} ms"]
    lines += [f"   {kind:<10} served {n:>6}" for kind, n in sorted(kinds.items())]
    lines += [f"   failed {kind}/{why}: {n}" for (kind, why), n in sorted(failed.items())]
    ends = Counter((e.how, e.retry_hint) for e in load.stream_ends)
    lines += [f"   listen streams ended {how}{' (retry hint)' if hint else ''}: {n}"
              for (how, hint), n in sorted(ends.items())]
    lines += [f"   {name}: {value}" for name, value in figures.items()]
    return "\n".join(lines)


def recovery(load: Load, kinds: tuple[str, ...], back: float) -> dict[str, float]:
    """Seconds from ``back`` to each kind's first success."""
    out = {}
    for kind in kinds:
        first = load.first_success_after(kind, back)
        assert first is not None, f"no {kind} request succeeded after Redis returned"
        out[kind] = round(first - back, 3)
    return out


STORE_KINDS = ("publish", "session", "listen")


# -- hostile clients -----------------------------------------------------------------------
async def slow_body(instance: Instance) -> tuple[int, float]:
    """One byte of body every 0.25 s: the status it got and after how long."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "test_simple_text", "arguments": {}, "_meta": META}}).encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", instance.port)
    started = time.monotonic()
    head = ["POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{instance.port}",
            f"Content-Length: {len(body)}",
            *(f"{k}: {v}" for k, v in modern_headers("tools/call", "test_simple_text").items())]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
    try:
        async with asyncio.timeout(15):
            reply = asyncio.ensure_future(read_head(reader))
            for byte in body:
                if reply.done():
                    break
                with contextlib.suppress(OSError):
                    writer.write(bytes([byte]))
                await asyncio.sleep(0.25)
            status, _ = await reply
            rest = await reader.read()  # the server closes the connection after a 408
        assert rest.endswith(b"}") or rest == b""
        return status, time.monotonic() - started
    finally:
        writer.close()


async def stalled_reader(fleet: FaultFleet, victim: int, trigger: int
                         ) -> dict[str, Any]:
    """A listen stream on ``victim`` whose client stops reading while events pile up
    (large ones, announced on ``trigger``). Returns what was measured."""
    instance = fleet.instances[victim]
    assert instance.proc is not None
    before = await debug(instance)
    rss_before = rss(instance.proc)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, ("127.0.0.1", instance.port))
    body = json.dumps({"jsonrpc": "2.0", "id": "stalled", "method": "subscriptions/listen",
                       "params": {"_meta": META, "notifications": {
                           "resourceSubscriptions": ["test://stall"]}}}).encode()
    head = ["POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{instance.port}",
            f"Content-Length: {len(body)}",
            *(f"{k}: {v}" for k, v in modern_headers("subscriptions/listen").items())]
    await loop.sock_sendall(sock, ("\r\n".join(head) + "\r\n\r\n").encode() + body)
    got = b""
    while b"acknowledged" not in got:
        got += await asyncio.wait_for(loop.sock_recv(sock, 4096), 5)
    assert (await debug(instance))["listens"] == before["listens"] + 1
    # The client reads no more. Announce large updates of what it watches.
    conn = Http1(fleet.instances[trigger].url)
    big = "test://stall/" + "x" * 32_000
    stalled_at = time.monotonic()
    try:
        # Enough to fill the kernel's buffers on both sides (autotuned up to 4 MiB on
        # loopback) and the server's own transport buffer.
        for n in range(240):
            call = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
                "name": "test_trigger_resource_update", "arguments": {"uri": big},
                "_meta": META}}
            status, _, _ = await conn.request(
                "POST", modern_headers("tools/call", "test_trigger_resource_update"),
                json.dumps(call).encode())
            assert status == 200
    finally:
        await conn.close()
    # Dropped once a write waited FAULTS_SEND_TIMEOUT: the stream and its Redis
    # subscription are released while the client still reads nothing.
    deadline = time.monotonic() + 15
    while (await debug(instance))["listens"] > before["listens"]:
        assert time.monotonic() < deadline, "the stalled stream was never dropped"
        await asyncio.sleep(0.2)
    dropped_after = time.monotonic() - stalled_at
    growth = rss(instance.proc) - rss_before
    # What the client could still read ends: the server closed the connection.
    closed = False
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(10):
            while True:
                try:
                    chunk = await loop.sock_recv(sock, 1 << 16)
                except ConnectionResetError:
                    chunk = b""
                if not chunk:
                    closed = True
                    break
    sock.close()
    return {"dropped_after_s": round(dropped_after, 2), "rss_growth_mib":
            round(growth / 2**20, 1), "connection_closed": closed}


async def idle_connections(instance: Instance, count: int) -> dict[str, Any]:
    """``count`` connections that never send anything, and a few that send half a head:
    all closed by the instance within its header timeout (plus its once-a-second check),
    while it goes on serving."""
    loop = asyncio.get_running_loop()
    socks = []
    for n in range(count):
        sock = socket.socket()
        sock.setblocking(False)
        await loop.sock_connect(sock, ("127.0.0.1", instance.port))
        if n % 10 == 0:
            await loop.sock_sendall(sock, b"POST /mcp HTTP/1.1\r\nHost: x\r\n")
        socks.append(sock)
    opened = time.monotonic()
    peak = (await debug(instance))["fds"]

    async def closed(sock: socket.socket) -> float:
        try:
            while await loop.sock_recv(sock, 1024):
                pass
        except ConnectionResetError:
            pass
        return time.monotonic() - opened

    async with asyncio.timeout(15):
        times = await asyncio.gather(*(closed(s) for s in socks))
    for sock in socks:
        sock.close()
    return {"idle_connections": count, "fds_at_peak": peak,
            "all_closed_within_s": round(max(times), 2)}


# -- 1. a plain Redis: rolling restart, hostile clients, an outage ---------------------------
async def test_rolling_restart_hostile_clients_and_a_redis_outage(tmp_path: Path) -> None:
    redis = RedisNode(tmp_path / "redis")
    redis.start()
    try:
        with fault_fleet(tmp_path, redis.url) as fleet:
            await _plain_redis_scenario(fleet, redis)
    finally:
        redis.stop()


async def _plain_redis_scenario(fleet: FaultFleet, redis: RedisNode) -> None:
    started = time.monotonic()
    load = Load(fleet.url)
    async with raw_redis(redis.url) as raw:
        baseline_keys = int(await raw.dbsize())
        load.start()
        await asyncio.sleep(2.0)

        # Rolling restart under load: 0 failures of any kind.
        roll_start = time.monotonic()
        away = []
        for i in range(3):
            away.append(await asyncio.to_thread(fleet.restart_instance, i))
            await asyncio.sleep(1.2)  # nginx's fail_timeout: back in the rotation
        roll_end = time.monotonic()

        # Hostile clients at single instances, the load going on through nginx.
        hostile_start = time.monotonic()
        slow, stalled, idle = await asyncio.gather(
            slow_body(fleet.instances[0]), stalled_reader(fleet, 1, 2),
            idle_connections(fleet.instances[2], 300))
        hostile_end = time.monotonic()
        await load.stop()
        rolled = [o for o in load.outcomes if roll_start <= o.start <= roll_end]
        # The one refusal a drain makes by design (mcpcore.transports.admission): a new
        # listen stream that reaches a draining instance over a connection the proxy
        # kept alive gets 503 shutting_down with Retry-After, and its client retries.
        refused = [o for o in rolled if (o.kind, o.result) == ("listen", "shutting_down")]
        assert rolled and not [o for o in rolled if not o.ok and o not in refused], Counter(
            (o.kind, o.result) for o in rolled if not o.ok)
        assert all(any(later.kind == "listen" and later.ok and later.start > o.end
                       for later in load.outcomes) for o in refused), refused
        assert not load.failures(since=hostile_start, until=hostile_end)
        assert slow[0] == 408 and slow[1] < 5.0, slow
        assert stalled["connection_closed"] and stalled["rss_growth_mib"] < 30, stalled
        assert idle["all_closed_within_s"] < 5.0, idle
        drained = [e for e in load.stream_ends if roll_start <= e.at <= roll_end]
        assert drained and all(e.how == "result" and e.retry_hint for e in drained), drained
        first = summary("rolling restart and hostile clients", load,
                        instance_away_s=[round(a, 2) for a in away],
                        slow_body=f"HTTP {slow[0]} after {slow[1]:.2f} s",
                        stalled_reader=stalled, idle=idle)

        # Settled: what each instance holds with nothing to do.
        before = [await _settled(i) for i in fleet.instances]
        assert int(await raw.dbsize()) == baseline_keys, await _leftovers(raw)

        # The outage, under load.
        load = Load(fleet.url)
        load.start()
        await asyncio.sleep(2.0)
        down = time.monotonic()
        await asyncio.to_thread(redis.stop)
        await asyncio.sleep(3.0)
        await asyncio.to_thread(redis.start)
        back = time.monotonic()
        await asyncio.sleep(RECOVERY_BOUND + 1.0)
        await load.stop()
        assert not load.failures("stateless"), Counter(o.result for o in
                                                       load.failures("stateless"))
        store_failures = load.failures(*STORE_KINDS)
        assert store_failures, "the outage was not seen"
        assert {o.result for o in store_failures} == {"store_unavailable"}, Counter(
            o.result for o in store_failures)
        window = (down - 0.5, back + RECOVERY_BOUND)
        outside = [o for o in store_failures if not window[0] <= o.start <= window[1]]
        assert not outside, outside[:5]
        recovered = recovery(load, STORE_KINDS, back)
        assert max(recovered.values()) < RECOVERY_BOUND, recovered
        slowest = max(o.latency for o in load.outcomes)
        assert slowest < 5.0, "a request hung during the outage"
        during = [e for e in load.stream_ends if down <= e.at <= back + 1.0]
        assert during, "no listen stream was open when Redis stopped"
        assert all(e.how == "error:store_unavailable" for e in during), during
        # Logged once per outage per instance (not per request), and its end once.
        for i in range(3):
            assert fleet.logged(i, "logged once per outage") == 1, fleet.instances[i].log
            assert fleet.logged(i, "is reachable again after") == 1
        print(first)
        print(summary("Redis outage", load,
                      outage_s=round(back - down, 2),
                      store_failures_for_s=round(max(o.end for o in store_failures)
                                                 - min(o.start for o in store_failures), 2),
                      recovery_s_after_redis_returned=recovered,
                      slowest_request_ms=round(slowest * 1000)))

    # Nothing left over: keys, subscribers, tasks, file descriptors.
    after = [await _settled(i) for i in fleet.instances]
    async with raw_redis(redis.url) as raw:  # (the first client's connection died)
        assert int(await raw.dbsize()) == baseline_keys, await _leftovers(raw)
        assert dict(await raw.pubsub_numsub("mcpcore:events"))[b"mcpcore:events"] == 0
        assert await raw.pubsub_channels("mcpcore:legacy-reply:*") == []
    for b, a in zip(before, after, strict=True):
        assert a["tasks"] <= b["tasks"] + 1, (b, a)
        assert a["fds"] <= b["fds"] + 2, (b, a)
        assert a["listens"] == a["streams"] == a["requests"] == 0, a
    print(f"   settled before/after the outage: {before} / {after}")
    print(f"   the whole scenario took {time.monotonic() - started:.1f} s")


async def _settled(instance: Instance, quiet: float = 6.0) -> dict[str, Any]:
    """The instance's /debug once idle keep-alive connections are gone (uvicorn closes
    them after 5 s; nginx after 4 s)."""
    deadline = time.monotonic() + quiet + 10
    await asyncio.sleep(quiet)
    while True:
        report = await debug(instance)
        if report["requests"] <= 1 or time.monotonic() > deadline:  # the /debug itself
            return report
        await asyncio.sleep(0.2)


# -- 2. Redis Sentinel: a failover under load ------------------------------------------------
async def test_a_sentinel_failover_under_load_loses_nothing_acknowledged(
        tmp_path: Path) -> None:
    with redis_sentinel(tmp_path / "sentinel") as group, \
            fault_fleet(tmp_path, group.url) as fleet:
        load = Load(fleet.url, listeners=2)
        acknowledged: list[str] = []
        writing = asyncio.Event()
        writer = asyncio.create_task(_open_sessions(fleet.url, acknowledged, writing))
        load.start()
        await asyncio.sleep(2.0)
        old, new = await asyncio.to_thread(group.failover)
        switched = time.monotonic()
        await asyncio.sleep(4.0)
        writing.set()
        await writer
        await load.stop()
        assert not load.failures("stateless")
        failures = load.failures(*STORE_KINDS)
        assert {o.result for o in failures} <= {"store_unavailable"}, [
            (o.kind, o.result, o.status, round(o.start - switched, 3), o.upstream)
            for o in failures]
        assert all(switched - 10 <= o.start <= switched + RECOVERY_BOUND for o in failures), [
            (o.kind, o.result, round(o.start - switched, 3), o.upstream) for o in failures]
        recovered = recovery(load, STORE_KINDS, switched)
        assert max(recovered.values()) < RECOVERY_BOUND, recovered
        slowest = max(o.latency for o in load.outcomes)
        assert slowest < 5.0, "a request hung during the failover"
        # Every session the fleet acknowledged (HTTP 200 with an id) is still there on
        # the new primary: none was lost to the failover.
        await asyncio.to_thread(group.wait_demoted, old)
        conn = Http1(fleet.url)
        missing = []
        try:
            for sid in acknowledged:
                status, _, _ = await conn.request("DELETE", {
                    "Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY})
                if status != 200:
                    missing.append((sid[:8], status))
        finally:
            await conn.close()
        assert acknowledged and not missing, missing
        for i in range(3):
            assert fleet.logged(i, "Sentinel failed faults over") == 1
        window = (round(max(o.end for o in failures) - min(o.start for o in failures), 2)
                  if failures else 0.0)
        print(summary("Sentinel failover", load,
                      primary=f"{old} -> {new}",
                      writes_refused_for_s=window,
                      recovery_s_after_switch=recovered,
                      sessions_acknowledged_during_run=len(acknowledged),
                      sessions_lost=len(missing),
                      slowest_request_ms=round(slowest * 1000)))


async def _leftovers(raw: aioredis.Redis) -> list[tuple[str, int]]:
    """Every key in Redis with its TTL in seconds (-1: none): what a failed
    "nothing left over" check found."""
    return [(key.decode(errors="replace"), int(await raw.ttl(key)))
            async for key in raw.scan_iter(count=100)]


async def _open_sessions(url: str, acknowledged: list[str], done: asyncio.Event) -> None:
    """Open legacy sessions as fast as the fleet acknowledges them, until ``done``."""
    conn = Http1(url)
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": {"name": "durability", "version": "1"}}}).encode()
    headers = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}
    try:
        for _ in range(5000):
            if done.is_set():
                return
            with contextlib.suppress(OSError, asyncio.IncompleteReadError):
                status, response_headers, _ = await conn.request("POST", headers, init)
                if status == 200:
                    acknowledged.append(response_headers["mcp-session-id"])
            await asyncio.sleep(0.01)
    finally:
        await conn.close()


# -- 3. Redis Cluster ------------------------------------------------------------------------
async def test_an_instance_on_a_redis_cluster(tmp_path: Path) -> None:
    with redis_cluster(tmp_path / "cluster") as cluster, \
            fault_fleet(tmp_path, cluster.url) as fleet:
        load = Load(fleet.url, stateless=1, publishers=1, sessions=2, listeners=2)
        load.start()
        await asyncio.sleep(4.0)
        await load.stop()
        assert not load.failures(), Counter((o.kind, o.result) for o in load.failures())
        for kind in ("stateless", "publish", "session", "listen"):
            assert load.of(kind), kind
        # Sessions' keys land on every node (a slot each, hashed by session id), and
        # each is found and deleted through whichever instance nginx picks.
        conn = Http1(fleet.url)
        init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name": "cluster", "version": "1"}}}).encode()
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}
        try:
            sessions = []
            for _ in range(30):
                status, reply, _ = await conn.request("POST", headers, init)
                assert status == 200
                sessions.append(reply["mcp-session-id"])
            spread = []
            for node in cluster.nodes:
                async with raw_redis(node.url) as raw:
                    spread.append(int(await raw.dbsize()))
            assert sum(spread) == 30 and all(spread), spread
            for sid in sessions:
                status, _, _ = await conn.request("DELETE", {
                    "Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY})
                assert status == 200
        finally:
            await conn.close()
        for node in cluster.nodes:
            async with raw_redis(node.url) as raw:
                assert int(await raw.dbsize()) == 0
        print(summary("Redis Cluster", load, session_keys_per_node=spread))


# -- the documentation matches what runs -----------------------------------------------------
def test_the_documented_nginx_directives_are_the_tested_ones() -> None:
    text = (REPO / "docs" / "deploying.md").read_text()
    section = text[text.index("## When things fail"):]
    block = re.search(r"```nginx\n(.*?)```", section, re.DOTALL)
    assert block is not None
    documented = {" ".join(line.split("#")[0].split()) for line in block.group(1).splitlines()}
    for line in (LOCATION + UPSTREAM_TAIL).splitlines():
        assert " ".join(line.split()) in documented, line

