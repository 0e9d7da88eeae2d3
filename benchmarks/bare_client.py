"""The bare client of benchmarks/bench_api.py: the least a program can do for the same calls.

    python benchmarks/bare_client.py DATA.parquet BASE_URL CONCURRENCY

Reads the Parquet split as a stream (pyarrow), and for every row POSTs an OpenAI chat
completion with the row's image as a base64 data URL and its question, with aiohttp and
CONCURRENCY requests in flight; no journal, no retries, no pacing.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys

import aiohttp
import pyarrow.parquet as pq


def bodies(path: str):
    pf = pq.ParquetFile(path, buffer_size=1 << 20, pre_buffer=False)
    for batch in pf.iter_batches(batch_size=8):
        for row in batch.to_pylist():
            url = "data:image/jpeg;base64," + base64.b64encode(row["image"]["bytes"]).decode()
            content = [{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": row["question"]}]
            yield json.dumps({"model": "bench-model", "messages": [{"role": "user", "content": content}], "n": 1,
                              "max_completion_tokens": 64, "temperature": 0}).encode()  # fmt: skip


async def main(path: str, base_url: str, concurrency: int) -> int:
    queue: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=2 * concurrency)
    headers = {"Authorization": "Bearer sk-bench", "Content-Type": "application/json"}
    failed = 0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:

        async def worker() -> None:
            nonlocal failed
            while (body := await queue.get()) is not None:
                async with session.post(base_url + "/chat/completions", data=body, headers=headers) as resp:
                    answer = await resp.json()
                    failed += resp.status != 200 or not answer["choices"][0]["message"]["content"]

        workers = [asyncio.create_task(worker()) for _ in range(concurrency)]
        for body in bodies(path):
            await queue.put(body)
        for _ in workers:
            await queue.put(None)
        await asyncio.gather(*workers)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]))))
