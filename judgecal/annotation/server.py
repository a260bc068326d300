"""A managed Label Studio server: installed into its own virtual environment on first use (it pins
Django and friends tightly), started headless on loopback with its data under the workspace, every
phone-home switch off, an admin account and API token created non-interactively.

Or connect to an existing server with ``JUDGECAL_LS_URL`` and ``JUDGECAL_LS_TOKEN``.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import platformdirs

from judgecal.data.store import pid_alive
from judgecal.errors import BackendError

LS_VERSION = "1.23.2"
VENV_ENV = "JUDGECAL_LS_VENV"
URL_ENV, TOKEN_ENV = "JUDGECAL_LS_URL", "JUDGECAL_LS_TOKEN"


class LabelStudioError(BackendError):
    """The server cannot be installed, started, reached or used."""


@dataclass(frozen=True)
class Connection:
    url: str
    token: str


def venv_dir() -> Path:
    return Path(os.environ.get(VENV_ENV) or Path(platformdirs.user_data_dir("judgecal")) / f"label-studio-{LS_VERSION}")


def ensure_installed(progress: bool = True) -> Path:
    """The ``label-studio`` executable, installing Label Studio into its own venv if needed."""
    venv = venv_dir()
    exe = venv / "bin" / "label-studio"
    stamp = venv / f".installed-{LS_VERSION}"
    if exe.exists() and stamp.exists():
        return exe
    if progress:
        print(f"installing Label Studio {LS_VERSION} into {venv} (once; about 1 GB)...", file=sys.stderr)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", f"label-studio=={LS_VERSION}"],
                       check=True)
    except subprocess.CalledProcessError as exc:
        raise LabelStudioError(f"could not install label-studio=={LS_VERSION} into {venv}: {exc}") from None
    stamp.touch()
    return exe


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _healthy(url: str) -> bool:
    import httpx

    try:
        return httpx.get(f"{url}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


class ManagedServer:
    """``<workspace>/label-studio/``: ``data/`` (the server's), ``server.json`` and ``credentials.json`` (0600)."""

    def __init__(self, workspace: str | os.PathLike[str], port: int = 8480) -> None:
        self.root = Path(workspace) / "label-studio"
        self.port = port
        self.info_path = self.root / "server.json"
        self.cred_path = self.root / "credentials.json"

    # -- state ------------------------------------------------------------------------------
    def _info(self) -> dict[str, object] | None:
        return json.loads(self.info_path.read_text()) if self.info_path.exists() else None

    def credentials(self) -> dict[str, str]:
        if not self.cred_path.exists():
            self.root.mkdir(parents=True, exist_ok=True)
            cred = {"username": "admin@judgecal.local", "password": secrets.token_urlsafe(16),
                    "token": secrets.token_hex(20)}
            fd = os.open(self.cred_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                json.dump(cred, fh)
        data: dict[str, str] = json.loads(self.cred_path.read_text())
        return data

    def env(self) -> dict[str, str]:
        cred = self.credentials()
        run = self.root
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "LABEL_STUDIO_"))}
        env.update({
            "LATEST_VERSION_CHECK": "false", "COLLECT_ANALYTICS": "false", "SENTRY_DSN": "",
            "FRONTEND_SENTRY_DSN": "", "XDG_DATA_HOME": str(run / "xdg" / "data"),
            "XDG_CONFIG_HOME": str(run / "xdg" / "config"), "XDG_CACHE_HOME": str(run / "xdg" / "cache"),
            "LABEL_STUDIO_BASE_DATA_DIR": str(run / "data"), "LABEL_STUDIO_USERNAME": cred["username"],
            "LABEL_STUDIO_PASSWORD": cred["password"], "LABEL_STUDIO_USER_TOKEN": cred["token"],
            "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true", "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
            # judgecal's settings: Label Studio's own, with annotators' permissions tightened (see ls_extension.py)
            "DJANGO_SETTINGS_MODULE": "judgecal_ls", "PYTHONPATH": str(self._extension().parent),
        })
        return env

    def _extension(self) -> Path:
        """``judgecal_ls.py`` (annotation/ls_extension.py) where Label Studio's Python imports it."""
        path = self.root / "ext" / "judgecal_ls.py"
        text = resources.files("judgecal.annotation_assets").joinpath("ls_extension.py").read_text("utf-8")
        if not path.exists() or path.read_text("utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, "utf-8")
        return path

    def provision(self, people: list[dict[str, str]]) -> dict[str, dict[str, Any]]:
        """Annotators ``{email, password}`` each in an organisation of their own, run by a service account.

        Returns, per email: ``user_id``, ``org_id``, ``service_email``, ``service_user_id`` and ``service_token``.
        """
        ensure_installed(progress=False)
        python = venv_dir() / "bin" / "python"
        req = json.dumps({"admin": self.credentials()["username"], "annotators": people})
        done = subprocess.run([str(python), str(self._extension())], input=req, env=self.env(),
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise LabelStudioError(f"could not set up annotator organisations: {done.stderr.strip()[-400:]}")
        out: dict[str, dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
        return out

    @property
    def url(self) -> str:
        info = self._info()
        port = int(info["port"]) if info else self.port  # type: ignore[call-overload]
        return f"http://127.0.0.1:{port}"

    def connection(self) -> Connection:
        return Connection(self.url, self.credentials()["token"])

    # -- lifecycle ------------------------------------------------------------------------------
    def status(self) -> dict[str, object]:
        info = self._info()
        if not info:
            return {"running": False}
        alive = pid_alive(int(info["pid"]))  # type: ignore[call-overload]
        return {"running": alive and _healthy(self.url), "url": self.url, "pid": info["pid"]}

    def start(self, timeout_s: float = 180.0) -> Connection:
        if self.status().get("running"):
            return self.connection()
        if _port_open(self.port):
            raise LabelStudioError(f"port {self.port} on 127.0.0.1 is in use; pick another with --port")
        exe = ensure_installed()
        (self.root / "data").mkdir(parents=True, exist_ok=True)
        log = open(self.root / "server.log", "ab")  # noqa: SIM115 - the child keeps it open
        proc = subprocess.Popen(
            [str(exe), "start", "--no-browser", "--internal-host", "127.0.0.1", "--port", str(self.port),
             "--data-dir", str(self.root / "data")],
            env=self.env(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
        self.info_path.write_text(json.dumps({"pid": proc.pid, "port": self.port}))
        deadline = time.time() + timeout_s
        # Once healthy the server outlives this command (`annotate server stop` ends it); stopped while it
        # starts (Ctrl-C, SIGTERM), the command takes the half-started server down with it: no orphan.
        on_term = _raise_interrupt_on_sigterm()
        try:
            while time.time() < deadline:
                if proc.poll() is not None:
                    raise LabelStudioError(f"Label Studio exited with {proc.returncode}; see "
                                           f"{self.root / 'server.log'}")
                if _healthy(self.url):
                    return self.connection()
                time.sleep(0.5)
        except KeyboardInterrupt:
            self.stop()
            raise
        finally:
            if on_term is not None:
                signal.signal(signal.SIGTERM, on_term)
        self.stop()
        raise LabelStudioError(f"Label Studio did not become healthy in {timeout_s:.0f} s; see {self.root / 'server.log'}")

    def stop(self) -> bool:
        info = self._info()
        if not info:
            return False
        pid = int(info["pid"])  # type: ignore[call-overload]
        try:
            os.killpg(pid, signal.SIGTERM)
            for _ in range(100):
                if not pid_alive(pid):
                    break
                time.sleep(0.1)
            else:
                os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.info_path.unlink(missing_ok=True)
        return True

    def manage(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run ``label-studio <args>`` against this server's data (e.g. ``reset_password``)."""
        exe = ensure_installed(progress=False)
        return subprocess.run([str(exe), *args], env=self.env(), capture_output=True, text=True, check=False)



def _raise_interrupt_on_sigterm() -> Any:
    """Make SIGTERM raise KeyboardInterrupt, as SIGINT does (main thread only); returns the old handler."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, interrupt)


def connection_for(workspace: str | os.PathLike[str] | None, port: int = 8480) -> Connection:
    """``JUDGECAL_LS_URL``/``JUDGECAL_LS_TOKEN`` when set, else the workspace's managed server."""
    if os.environ.get(URL_ENV):
        token = os.environ.get(TOKEN_ENV)
        if not token:
            raise LabelStudioError(f"{URL_ENV} is set but {TOKEN_ENV} is not")
        return Connection(os.environ[URL_ENV].rstrip("/"), token)
    if workspace is None:
        raise LabelStudioError("no Label Studio: start one with `judgecal annotate server start` or set JUDGECAL_LS_URL")
    srv = ManagedServer(workspace, port)
    if not srv.status().get("running"):
        raise LabelStudioError(f"Label Studio for {workspace} is not running: `judgecal annotate server start`")
    return srv.connection()
