"""A minimal OpenAI-compatible chat-completions server on loopback that waits DELAY seconds per
request: it stands in for a remote API so that the benchmark measures judgecal's orchestration.
``python loopback_server.py PORT DELAY``; ``GET /count`` returns the number of completions served.

It shares the CPU with the engine it serves, so it does as little as it can per request: the reply
is serialised once, a request head is scanned as bytes, and a connection stays open (keep-alive)."""

from __future__ import annotations

import asyncio
import json
import sys

COUNT = 0
BODY = {"id": "c", "object": "chat.completion", "created": 0, "model": "bench",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "A"},
                     "logprobs": {"content": [{"token": "A", "logprob": -0.1, "bytes": None, "top_logprobs": [
                         {"token": "A", "logprob": -0.1, "bytes": None}, {"token": "B", "logprob": -2.4, "bytes": None}]}]}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 1, "total_tokens": 51}}


def reply(payload: bytes) -> bytes:
    return (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
            + str(len(payload)).encode() + b"\r\n\r\n" + payload)


COMPLETION = reply(json.dumps(BODY).encode())


def content_length(head: bytes) -> int:
    i = head.lower().find(b"\r\ncontent-length:")
    return int(head[i + 17:head.index(b"\r\n", i + 2)]) if i >= 0 else 0


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    global COUNT
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = content_length(head)
            if length:
                await reader.readexactly(length)
            if head.startswith(b"POST ") and head.split(b" ", 2)[1].endswith(b"/chat/completions"):
                COUNT += 1
                await asyncio.sleep(delay)
                writer.write(COMPLETION)
            else:
                writer.write(reply(json.dumps({"count": COUNT}).encode()))
    except (asyncio.IncompleteReadError, ConnectionResetError):
        pass
    finally:
        writer.close()


async def main(port: int, delay: float) -> None:
    server = await asyncio.start_server(lambda r, w: handle(r, w, delay), "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), float(sys.argv[2])))
