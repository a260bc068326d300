"""A throwaway Ray cluster on 127.0.0.1: a head and worker nodes as separate ``ray start`` processes.

For tests and benchmarks: every node runs in its own temporary directory root, binds 127.0.0.1 and
keeps a small object store; :meth:`LoopbackCluster.kill_worker` ends one worker node (its raylet and
the worker processes under it) as a machine failure would, and :meth:`LoopbackCluster.stop` ends every
process this cluster started — found by its session directory, never by name, so other Ray clusters on
the machine are left alone. Nodes advertise 127.0.0.1, but Ray 2.60's GCS and raylet gRPC servers
listen on every interface, so the cluster requires a random token (``RAY_AUTH_MODE=token``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from judgecal.distributed.cluster import RayUnavailableError
from judgecal.errors import MissingExtraError

OBJECT_STORE = 200_000_000
# find a dead node in ~3 s instead of ~30 s
FAST_FAILURE = {"RAY_health_check_period_ms": "500", "RAY_health_check_failure_threshold": "4",
                "RAY_health_check_initial_delay_ms": "0", "RAY_USAGE_STATS_ENABLED": "0",
                # the Ray Client head waits this long for each client's server process (30 s by default,
                # too short on a loaded two-core machine)
                "RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S": "180"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _reload_auth() -> None:
    """Make a Ray already imported in this process read the authentication settings again."""
    try:
        from ray._raylet import AuthenticationTokenLoader, Config  # type: ignore[attr-defined]
    except ImportError:
        return
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


def _ray_bin() -> str:
    return str(Path(sys.executable).with_name("ray"))


class LoopbackCluster:
    """``LoopbackCluster(workers=2).start()`` ... ``.stop()`` (also a context manager)."""

    def __init__(self, workers: int = 2, cpus_per_worker: int = 1, head_cpus: int = 0,
                 client_server: bool = False) -> None:
        self.n_workers, self.cpus, self.head_cpus = workers, cpus_per_worker, head_cpus
        self.root = Path(tempfile.mkdtemp(prefix="jcray", dir="/tmp"))  # unix socket paths stay short
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        # With ``ray[client]`` installed, ``ray start --head`` serves Ray Client on port 10001 unless told
        # otherwise, and two clusters on one machine would clash there: every head gets a free port.
        has_client = importlib.util.find_spec("grpc") is not None
        if client_server and not has_client:
            raise MissingExtraError("grpc", "ray")  # grpcio comes with Ray's client
        self.client_port = _free_port() if has_client else None
        self.client_address = f"ray://127.0.0.1:{self.client_port}" if self.client_port else None
        # Ray's gRPC servers listen on every interface whatever the node address, so the cluster takes a
        # token of its own (in the environment of its nodes and of this process's drivers, no file)
        self.auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
        self.env = {**os.environ, **FAST_FAILURE, **self.auth}
        self._saved: dict[str, str | None] = {}
        self.worker_ports: list[int] = []
        self.procs: list[subprocess.Popen[bytes]] = []

    def _start(self, args: list[str]) -> None:
        log = open(self.root / f"start-{len(self.procs)}.log", "wb")  # noqa: SIM115 - kept with the process
        self.procs.append(subprocess.Popen([_ray_bin(), "start", "--block", "--node-ip-address", "127.0.0.1",
                                            "--object-store-memory", str(OBJECT_STORE), "--disable-usage-stats",
                                            *args], env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                           start_new_session=True))

    def start(self, timeout: float = 120.0) -> LoopbackCluster:
        for k, v in self.auth.items():  # this process's drivers (and their subprocesses) present the token
            self._saved.setdefault(k, os.environ.get(k))
            os.environ[k] = v
        _reload_auth()
        client = ["--ray-client-server-port", str(self.client_port)] if self.client_port else []
        self._start(["--head", "--port", str(self.port), "--num-cpus", str(self.head_cpus),
                     "--include-dashboard=false", "--temp-dir", str(self.root), *client])
        self._wait(lambda: self._alive_nodes() >= 1, timeout, "the head")
        for _ in range(self.n_workers):
            self.add_worker(timeout)
        return self

    def add_worker(self, timeout: float = 120.0) -> None:
        want = self._alive_nodes() + 1
        port = _free_port()
        self.worker_ports.append(port)
        self._start(["--address", self.address, "--num-cpus", str(self.cpus), "--node-manager-port", str(port)])
        self._wait(lambda: self._alive_nodes() >= want, timeout, "a worker node")

    def _alive_nodes(self) -> int:
        """Nodes the GCS reports alive (asked from a short-lived subprocess, not this process)."""
        code = ("import ray,sys; ray.init(address=sys.argv[1], logging_level='ERROR', log_to_driver=False); "
                "print(sum(n['Alive'] for n in ray.nodes()))")
        try:
            out = subprocess.run([sys.executable, "-c", code, self.address], env=self.env, capture_output=True,
                                 text=True, timeout=60)
            return int(out.stdout.strip().splitlines()[-1])
        except (subprocess.TimeoutExpired, ValueError, IndexError):
            return 0

    def _wait(self, ready: object, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():  # type: ignore[operator]
                return
            if any(p.poll() is not None for p in self.procs):
                break
            time.sleep(0.5)
        logs = "\n".join(p.read_text(errors="replace")[-2000:] for p in sorted(self.root.glob("start-*.log")))
        self.stop()
        raise RayUnavailableError(f"Ray cluster: {what} did not come up:\n{logs}")

    def _pids(self, marker: str) -> list[int]:
        pids = []
        for d in Path("/proc").iterdir():
            if d.name.isdigit():
                try:
                    cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    continue
                if marker in cmd:
                    pids.append(int(d.name))
        return pids

    def kill_worker(self, index: int = -1) -> int:
        """SIGKILL worker node ``index``'s raylet (its worker processes exit with it); returns the pid."""
        port = self.worker_ports[index]
        pids = [p for p in self._pids(f"--node_manager_port={port}") if "raylet" in self._cmd(p)]
        if not pids:
            raise RuntimeError(f"no raylet with node manager port {port}")
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        return pids[0]

    @staticmethod
    def _cmd(pid: int) -> str:
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        """End every process of this cluster: the ``ray start`` processes, their groups, and anything
        running from this cluster's session directory."""
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=15)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)
        for pid in self._pids(str(self.root)):
            if pid != os.getpid():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.root, ignore_errors=True)
        for k, old in self._saved.items():
            if old is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = old
        _reload_auth()

    def __enter__(self) -> LoopbackCluster:
        try:
            return self.start()
        except BaseException:  # a cluster that did not come up leaves no process behind
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        """Disconnect this process's driver, if any, then stop the cluster."""
        import ray

        if ray.is_initialized():
            ray.shutdown()
        self.stop()
