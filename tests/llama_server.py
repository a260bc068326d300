"""Serve SmolLM2 over the OpenAI-compatible HTTP API with llama_cpp.server, counting requests.

``python tests/llama_server.py PORT`` — the same server ``python -m llama_cpp.server`` runs, plus a
middleware that counts chat-completion requests server-side (``GET /test/count``).
"""

from __future__ import annotations

import sys

import uvicorn
from llama_cpp.server.app import create_app
from llama_cpp.server.settings import ModelSettings, ServerSettings
from starlette.requests import Request
from starlette.responses import JSONResponse

from judgecal.judges.backends.local import model_path


def main() -> None:
    port = int(sys.argv[1])
    app = create_app(
        server_settings=ServerSettings(host="127.0.0.1", port=port),
        model_settings=[ModelSettings(model=str(model_path("smollm2")), model_alias="smollm2", n_ctx=4096,
                                      logits_all=True, n_threads=2, verbose=False)],
    )
    counts = {"chat": 0}

    @app.middleware("http")
    async def count(request: Request, call_next):  # type: ignore[no-untyped-def]
        if request.url.path == "/v1/chat/completions":
            counts["chat"] += 1
        return await call_next(request)

    @app.get("/test/count")
    async def get_count() -> JSONResponse:
        return JSONResponse(counts)

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
