"""Real Redis topologies on loopback, for the fault tests: a server that can be stopped and
started again on its port (with its data), a Sentinel-managed primary with a replica and
three sentinels, and a three-node Redis Cluster (``redis-cli --cluster create``).

Every process is started here and stopped on exit; a missing binary skips loudly outside
CI and fails in CI (``require_tool``). Waits are bounded.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from tests.support.processes import free_port, launch_redis, require_tool, stop

__all__ = ["Cluster", "RedisNode", "SentinelSet", "redis_cluster", "redis_sentinel",
           "redis_tool", "wait_until"]


def redis_tool(name: str) -> str:
    """The path of ``redis-server`` or ``redis-cli`` (Debian: redis-server, redis-tools)."""
    path = shutil.which(name)
    require_tool(path is not None, name)
    assert path is not None
    return path


def wait_until(check: Callable[[], bool], what: str, timeout: float = 20.0,
               every: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)


def cli(port: int, *args: str, timeout: float = 5.0) -> str:
    """``redis-cli -p PORT ARGS...``'s output (raw, as text)."""
    done = subprocess.run([redis_tool("redis-cli"), "-h", "127.0.0.1", "-p", str(port),
                           "--raw", *args], capture_output=True, text=True, timeout=timeout,
                          check=False)
    return done.stdout


class RedisNode:
    """One ``redis-server`` on a fixed port, stoppable and startable again with its data
    (an RDB in ``folder``, saved on a graceful stop and loaded on start)."""

    def __init__(self, folder: Path, *, port: int | None = None,
                 args: Sequence[str] = ()) -> None:
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.args = list(args)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.proc = launch_redis(
            self.port, "--dir", str(self.folder), "--dbfilename", "dump.rdb",
            "--save", "3600 1", "--appendonly", "no", *self.args,
            log=self.folder / "redis.log")

    def stop(self) -> None:
        """SIGTERM: Redis saves its data and exits (clients see the connection drop)."""
        if self.proc is not None and self.proc.poll() is None:
            stop(self.proc, timeout=15.0)
        self.proc = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


class SentinelSet:
    """A primary, ``replicas`` replicas and three sentinels watching them as ``service``.

    (A store that waits for replicas, ``wait_replicas=N``, needs N replicas left after
    a failover to go on writing: the old primary rejoins as one only when Sentinel
    reconfigures it, some seconds later.)
    """

    def __init__(self, folder: Path, service: str = "faults", replicas: int = 1) -> None:
        self.service = service
        self.primary = RedisNode(folder / "a")
        self.replicas = [RedisNode(folder / f"r{i}", args=[
            "--replicaof", "127.0.0.1", str(self.primary.port)]) for i in range(replicas)]
        self.sentinel_ports = [free_port() for _ in range(3)]
        self.folder = folder
        self.sentinels: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{p}" for p in self.sentinel_ports)
        return f"redis+sentinel://{hosts}/{self.service}"

    def start(self) -> None:
        self.primary.start()
        for replica in self.replicas:
            replica.start()
        for replica in self.replicas:
            wait_until(lambda r=replica: "master_link_status:up" in cli(
                r.port, "INFO", "replication"), "a replica to sync")
        for i, port in enumerate(self.sentinel_ports):
            conf = self.folder / f"sentinel-{i}.conf"
            conf.write_text(
                f"dir {self.folder}\n"
                f"sentinel monitor {self.service} 127.0.0.1 {self.primary.port} 2\n"
                f"sentinel down-after-milliseconds {self.service} 1000\n"
                f"sentinel failover-timeout {self.service} 4000\n"
                f"sentinel parallel-syncs {self.service} 1\n")
            self.sentinels.append(launch_redis(port, "--sentinel", config=conf,
                                               log=self.folder / f"sentinel-{i}.log"))
        for port in self.sentinel_ports:
            wait_until(lambda p=port: self._knows_everyone(p), f"sentinel {port} to see "
                       "the replica and the other sentinels")

    def _knows_everyone(self, port: int) -> bool:
        replicas = cli(port, "SENTINEL", "REPLICAS", self.service)
        sentinels = cli(port, "SENTINEL", "SENTINELS", self.service)
        return (all(str(r.port) in replicas for r in self.replicas)
                and "s_down" not in replicas and sentinels.count("127.0.0.1") >= 2)

    def primary_port(self) -> int:
        """The port the sentinels name as the primary now."""
        out = cli(self.sentinel_ports[0], "SENTINEL", "GET-MASTER-ADDR-BY-NAME",
                  self.service).split()
        return int(out[1])

    def failover(self) -> tuple[int, int]:
        """``SENTINEL FAILOVER``: a replica becomes the primary, the others follow it,
        the old primary keeps running (Sentinel turns it into a replica some seconds
        later: ``wait_demoted``). Returns (old, new) primary ports once the new one has
        taken the role."""
        old = self.primary_port()
        assert "OK" in cli(self.sentinel_ports[0], "SENTINEL", "FAILOVER", self.service)
        wait_until(lambda: self.primary_port() != old, "the sentinels to name a new primary")
        new = self.primary_port()
        wait_until(lambda: "role:master" in cli(new, "INFO", "replication"),
                   "the new primary to take the role")
        return old, new

    def wait_demoted(self, old: int) -> None:
        """Until the old primary follows the new one and has synced from it."""
        wait_until(lambda: "master_link_status:up" in cli(old, "INFO", "replication"),
                   "the old primary to follow the new one", timeout=30.0, every=0.2)

    def stop(self) -> None:
        for proc in self.sentinels:
            if proc.poll() is None:
                stop(proc)
        self.sentinels = []
        for replica in self.replicas:
            replica.stop()
        self.primary.stop()


def _cluster_port() -> int:
    """A free port whose cluster bus port (port + 10000) is free too."""
    for _ in range(100):
        port = free_port()
        if port + 10000 > 65535:
            continue
        with contextlib.closing(socket.socket()) as bus:
            try:
                bus.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port
    raise AssertionError("no free port pair for a cluster node")


class Cluster:
    """Three primaries, no replicas: slots 0-16383 split between them."""

    def __init__(self, folder: Path) -> None:
        self.nodes = []
        for i in range(3):
            port = _cluster_port()
            self.nodes.append(RedisNode(folder / f"n{i}", port=port, args=[
                "--cluster-enabled", "yes", "--cluster-config-file", f"nodes-{port}.conf",
                "--cluster-node-timeout", "2000", "--save", ""]))

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)
        return f"redis+cluster://{hosts}"

    def start(self) -> None:
        for node in self.nodes:
            node.start()
        done = subprocess.run(
            [redis_tool("redis-cli"), "--cluster", "create",
             *(f"127.0.0.1:{n.port}" for n in self.nodes), "--cluster-replicas", "0",
             "--cluster-yes"], capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        for node in self.nodes:
            wait_until(lambda n=node: "cluster_state:ok" in cli(n.port, "CLUSTER", "INFO"),
                       f"cluster node {node.port} to be ok")

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


@contextlib.contextmanager
def redis_sentinel(folder: Path) -> Iterator[SentinelSet]:
    group = SentinelSet(folder)
    try:
        group.start()
        yield group
    finally:
        group.stop()


@contextlib.contextmanager
def redis_cluster(folder: Path) -> Iterator[Cluster]:
    cluster = Cluster(folder)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
