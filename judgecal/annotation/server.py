"""A managed Label Studio server: installed into its own virtual environment on first use (it pins
Django and friends tightly), started headless with its data under the workspace, every phone-home
switch off, an admin account and API token created non-interactively.

It listens on loopback unless given a ``host``; its public URL (default ``http://HOST:PORT``) is the
address annotators open: Label Studio builds its own links from it (``LABEL_STUDIO_HOST``), trusts it
as the origin of their forms (CSRF) and answers only requests addressed to it, the bound host or
loopback (``ALLOWED_HOSTS``). The settings extension's guards (``annotation/ls_extension.py``) apply
whatever the address.

Or connect to an existing server with ``JUDGECAL_LS_URL`` and ``JUDGECAL_LS_TOKEN``.
"""

from __future__ import annotations

import errno
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
from urllib.parse import urlsplit

import platformdirs

from judgecal.data.specs import http_url_problem
from judgecal.data.store import pid_alive
from judgecal.errors import BackendError, ConfigError, InputError, TransientError

LS_VERSION = "1.23.2"
VENV_ENV = "JUDGECAL_LS_VENV"
URL_ENV, TOKEN_ENV = "JUDGECAL_LS_URL", "JUDGECAL_LS_TOKEN"


class LabelStudioError(BackendError):
    """The server cannot be installed, started, reached or used."""


class LabelStudioStartingError(TransientError):
    """The workspace's server is still starting (or not answering yet): the same command later may succeed."""


@dataclass(frozen=True)
class Connection:
    url: str
    token: str


def venv_dir() -> Path:
    """Where Label Studio is installed (or will be): ``$JUDGECAL_LS_VENV``; else the one ``make setup-*`` installed
    beside this judgecal (``label-studio`` in the virtual environment judgecal runs from, when it holds this
    version), so a command run outside ``make`` does not install a second copy; else the user's data folder."""
    if os.environ.get(VENV_ENV):
        return Path(os.environ[VENV_ENV])
    beside = Path(sys.prefix) / "label-studio"
    if (beside / f".installed-{LS_VERSION}").exists() and (beside / "bin" / "label-studio").exists():
        return beside
    return Path(platformdirs.user_data_dir("judgecal")) / f"label-studio-{LS_VERSION}"


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


LOOPBACK = "127.0.0.1"
ANY = "0.0.0.0"  # noqa: S104 - an address the organiser asks for by name; the public URL then says which one
_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-")


def host_problem(host: str) -> str | None:
    """Why ``host`` cannot be the address the server binds, or ``None``: an IPv4 address or a host name."""
    if not host:
        return "must be an address of this machine, such as 127.0.0.1 or 0.0.0.0"
    if ":" in host:
        return (f"{host!r}: an IPv6 address is not supported; bind an IPv4 address (or 0.0.0.0), or put a "
                "reverse proxy in front")
    if not set(host) <= _HOST_CHARS or host.startswith(("-", ".")):
        return f"{host!r} is not an IPv4 address or host name"
    return None


def public_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be the address annotators open, or ``None``: ``http(s)://host[:port]`` at the root,
    without credentials, query or fragment."""
    if problem := http_url_problem(url, "https://review.example.org"):
        return problem
    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None:
        return f"{parts.scheme}://{parts.hostname}...: holds credentials (user:password@); annotators log in with their own"
    if parts.query or parts.fragment or url.endswith(("?", "#")):
        return f"{url!r} has a query or fragment; give the address only"
    if parts.path not in ("", "/"):
        return (f"{url!r} has a path ({parts.path!r}); Label Studio is served at the root of its address: "
                "give a host (and port) of its own to the reverse proxy")
    return None


def _origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``, as a browser sends it in ``Origin``."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _port_problem(host: str, port: int) -> tuple[str, str] | None:
    """The input (``host`` or ``port``) and why Label Studio could not listen on ``host:port`` as asked, or
    ``None``.

    ``host:port`` must be free to bind (and ``host`` an address of this machine); ``127.0.0.1:port`` must not
    answer either: Label Studio checks there and silently moves to the next port when it does.
    """
    try:
        family, _, _, _, addr = socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_STREAM)[0]
    except socket.gaierror:
        return "host", f"{host}: no such address (it does not resolve)"
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(addr)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return "port", f"port {port} on {host} is in use; pick another port"
            return "host", f"{host}: cannot listen there ({exc.strerror}); give an address of this machine"
    with socket.socket() as s:
        s.settimeout(0.5)
        if s.connect_ex((LOOPBACK, port)) == 0:
            return "port", (f"port {port} on {LOOPBACK} is in use (Label Studio would move to another port); "
                            "pick another port")
    return None


def _healthy(url: str) -> bool:
    import httpx

    try:
        return httpx.get(f"{url}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


class ManagedServer:
    """``<workspace>/label-studio/``: ``data/`` (the server's), ``server.json`` (its pid, port, host and public
    URL while it runs) and ``credentials.json`` (0600).

    ``host`` and ``public_url`` are what :meth:`start` asks for; ``None`` keeps what the running server was
    started with (loopback and ``http://HOST:PORT`` for a new one).
    """

    def __init__(self, workspace: str | os.PathLike[str], port: int = 8480, host: str | None = None,
                 public_url: str | None = None) -> None:
        self.root = Path(workspace) / "label-studio"
        self.port = port
        self.host = host
        self.asked_public_url = public_url.rstrip("/") if public_url else None
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

    def _bound(self) -> tuple[str, int, str]:
        """(host, port, public URL): the running server's, else those asked for."""
        info = self._info() or {}
        host = str(info.get("host") or self.host or LOOPBACK)
        port = int(info["port"]) if info.get("port") else self.port  # type: ignore[call-overload]
        public = str(info.get("public_url") or self.asked_public_url or f"http://{host}:{port}")
        return host, port, public

    @property
    def public_url(self) -> str:
        """The address annotators open (their links, Label Studio's own links)."""
        return self._bound()[2]

    def env(self) -> dict[str, str]:
        cred = self.credentials()
        run = self.root
        host, _, public = self._bound()
        names = dict.fromkeys([str(urlsplit(public).hostname), host, LOOPBACK, "localhost"])
        names.pop(ANY, None)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "LABEL_STUDIO_"))}
        env.update({
            "LATEST_VERSION_CHECK": "false", "COLLECT_ANALYTICS": "false", "SENTRY_DSN": "",
            "FRONTEND_SENTRY_DSN": "", "XDG_DATA_HOME": str(run / "xdg" / "data"),
            "XDG_CONFIG_HOME": str(run / "xdg" / "config"), "XDG_CACHE_HOME": str(run / "xdg" / "cache"),
            "LABEL_STUDIO_BASE_DATA_DIR": str(run / "data"), "LABEL_STUDIO_USERNAME": cred["username"],
            "LABEL_STUDIO_PASSWORD": cred["password"], "LABEL_STUDIO_USER_TOKEN": cred["token"],
            "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true", "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
            # the public address: Label Studio's own links, the origin its forms trust, the names it answers to
            "LABEL_STUDIO_HOST": public, "LABEL_STUDIO_CSRF_TRUSTED_ORIGINS": _origin(public),
            "LABEL_STUDIO_ALLOWED_HOSTS": ",".join(names),
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
        """Where judgecal itself talks to the server: the bound host (loopback when bound to every address)."""
        host, port, _ = self._bound()
        return f"http://{LOOPBACK if host == ANY else host}:{port}"

    def connection(self) -> Connection:
        return Connection(self.url, self.credentials()["token"])

    # -- lifecycle ------------------------------------------------------------------------------
    def status(self) -> dict[str, object]:
        info = self._info()
        if not info:
            return {"running": False}
        alive = pid_alive(int(info["pid"]))  # type: ignore[call-overload]
        return {"running": alive and _healthy(self.url), "url": self.url, "public_url": self.public_url,
                "host": self._bound()[0], "pid": info["pid"]}

    def start(self, timeout_s: float = 180.0) -> Connection:
        """Start the server on ``host:port`` (or return the running one's connection: asked for another host
        or public URL, it is refused, as moving a running server would break the links handed out)."""
        host = self.host or LOOPBACK
        for name, why in (("host", host_problem(host)),
                          ("public_url", self.asked_public_url and public_url_problem(self.asked_public_url))):
            if why:
                raise InputError(why, name=name)
        if host == ANY and not self.asked_public_url:
            raise InputError(f"host {ANY} listens on every address of this machine; say which one annotators "
                             "open with a public URL (e.g. http://review-box.example.org:8480)", name="public_url")
        if self.status().get("running"):
            running, _, public = self._bound()
            if (self.host and self.host != running) or (self.asked_public_url and self.asked_public_url != public):
                raise InputError(f"Label Studio for this workspace is already running on {running} for "
                                 f"{public}; stop it first (`judgecal annotate server stop`)")
            return self.connection()
        info = self._info()
        if info and pid_alive(int(info["pid"])):  # type: ignore[call-overload]
            raise LabelStudioStartingError(f"Label Studio for this workspace (pid {info['pid']}) is starting or not "
                                           f"answering at {self.url}; wait, or end it with "
                                           "`judgecal annotate server stop`")
        self.info_path.unlink(missing_ok=True)  # the state of a server that is gone (killed) says nothing now
        if problem := _port_problem(host, self.port):
            raise InputError(problem[1], name=problem[0])
        exe = ensure_installed()
        (self.root / "data").mkdir(parents=True, exist_ok=True)
        log = open(self.root / "server.log", "ab")  # noqa: SIM115 - the child keeps it open
        proc = subprocess.Popen(
            [str(exe), "start", "--no-browser", "--internal-host", host, "--port", str(self.port),
             "--data-dir", str(self.root / "data")],
            env=self.env(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
        public = self.asked_public_url or f"http://{host}:{self.port}"
        self.info_path.write_text(json.dumps({"pid": proc.pid, "port": self.port, "host": host, "public_url": public}))
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
            raise ConfigError(f"{URL_ENV} is set but {TOKEN_ENV} is not")
        return Connection(os.environ[URL_ENV].rstrip("/"), token)
    if workspace is None:
        raise LabelStudioError("no Label Studio: start one with `judgecal annotate server start` or set JUDGECAL_LS_URL")
    srv = ManagedServer(workspace, port)
    if not srv.status().get("running"):
        raise LabelStudioError(f"Label Studio for {workspace} is not running: `judgecal annotate server start`")
    return srv.connection()
