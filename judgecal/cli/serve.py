"""``judgecal serve``: an embedded judge over the OpenAI-compatible HTTP API (``llama_cpp.server``, as ``vllm
serve`` serves a GPU model), for ``--judge openai/<model> --base-url http://HOST:PORT/v1``. No logic of its
own: the command becomes the server (``exec``), so stopping it (SIGINT, SIGTERM) stops the server and leaves
no process behind."""

from __future__ import annotations

import argparse
import importlib.util
import os
import socket
import sys
from typing import Any

INSTALL = "pip install 'judgecal-toolkit[server]'"


def server_command(model: str, *, host: str, port: int, threads: int, n_ctx: int) -> list[str]:
    """The ``python -m llama_cpp.server`` command line serving ``model`` (an embedded model's name or a GGUF
    path) under its name, with logprobs on (``logits_all``)."""
    from judgecal.judges.backends.local import model_path

    path = model_path(model)
    alias = model if not model.endswith(".gguf") else path.stem
    return [sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--model_alias", alias,
            "--host", host, "--port", str(port), "--n_ctx", str(n_ctx), "--logits_all", "true",
            "--n_threads", str(threads), "--verbose", "false"]


def cmd_serve(args: argparse.Namespace) -> int:
    from judgecal.cli.common import UsageError
    from judgecal.inert import term

    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llama_cpp.server") is None \
            or importlib.util.find_spec("uvicorn") is None:
        raise UsageError(f"judgecal serve needs llama-cpp-python's server: {INSTALL}")
    with socket.socket() as s:  # the server would silently fail to bind, or another program answers instead
        s.settimeout(1.0)
        if s.connect_ex((args.address, args.port)) == 0:
            raise UsageError(f"{args.address}:{args.port} is already in use; choose another --port")
    cmd = server_command(args.model, host=args.address, port=args.port, threads=args.threads, n_ctx=args.n_ctx)
    alias = term(cmd[cmd.index("--model_alias") + 1])
    if not args.quiet:
        print(f"serving {alias} on http://{args.address}:{args.port}/v1 (OpenAI-compatible); judge with: "
              f"judgecal judge --judge openai/{alias} --base-url http://{args.address}:{args.port}/v1 -w WS",
              file=sys.stderr, flush=True)
    os.execv(sys.executable, cmd)  # become the server: a signal to this process reaches it, no child is left
    return 0  # pragma: no cover


def add_parser(sub: Any) -> None:
    """Register ``judgecal serve`` on ``judgecal``'s subparsers."""
    from judgecal.cli.common import as_count as count
    from judgecal.cli.common import as_port as port

    p = sub.add_parser("serve", help="serve an embedded judge over the OpenAI-compatible HTTP API (llama.cpp)")
    p.add_argument("--model", default="smollm2", help="an embedded model (smollm2, gemma3) or a .gguf file")
    p.add_argument("--port", type=port, default=8000)
    p.add_argument("--address", default="127.0.0.1", help="listen address (default loopback only)")
    p.add_argument("--threads", type=count, default=max(1, min(os.cpu_count() or 1, 8)))
    p.add_argument("--n-ctx", type=count, default=4096, help="context length in tokens")
    p.add_argument("-q", "--quiet", action="store_true", help="no line saying where it serves")
    p.set_defaults(func=cmd_serve)
