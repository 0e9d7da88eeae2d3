"""Fake OpenAI / Anthropic / Gemini servers on 127.0.0.1 and a tiny benchmark dataset for tests."""

from .core import Call, FakeServer, Fault, Rule, content_key, fake_answer, fake_usage

__all__ = ["Call", "FakeServer", "Fault", "Rule", "content_key", "fake_answer", "fake_usage"]
