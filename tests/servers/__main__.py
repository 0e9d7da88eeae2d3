"""Run the fake server standalone: ``python -m tests.servers --latency 0.2``."""

from __future__ import annotations

import argparse
import time

from .core import FakeServer

parser = argparse.ArgumentParser()
parser.add_argument("--latency", type=float, default=0.2)
args = parser.parse_args()
with FakeServer(latency=args.latency) as server:
    print(f"listening on {server.url('anthropic')} (OpenAI base_url: {server.url('openai')})", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
