"""One model's settings, parsed once: the frozen :class:`ModelConfig` (issue 20).

``params.yaml``'s entry ``models.<name>`` is validated when the file is read
(:func:`sabre_prior.config.model_settings`: the schema, then the registry's checks) and parsed
here, once per job, into typed, frozen parts that everything on the job side is handed:

* ``engine``: :class:`~sabre_prior.inference.engine.EngineSettings` (concurrency, retries,
  timeouts, rate limits; defaults by backend kind);
* ``images``: :class:`~sabre_prior.inference.prompts.ImagePolicy` (what image is sent);
* ``prices`` and ``batch_prices``: :class:`~sabre_prior.inference.usage.Prices` or None;
* ``batch``: :class:`~sabre_prior.inference.batch.BatchSettings` (the provider batch API);
* ``max_output_tokens``: the one name, API and local alike, with its one default
  (:data:`sabre_prior.registry.DEFAULT_MAX_OUTPUT_TOKENS`).

The backend-specific keys (``model_id``, ``temperature``, ``reasoning_effort``, a local model's
``dtype`` ...) stay in ``settings`` (read-only) for the backend's own class, which checks them
when it is created: a provider's quirks live on its backend class
(:mod:`sabre_prior.inference.models`), not here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from .. import registry
from ..errors import ConfigError
from .batch import BatchSettings, batch_prices
from .engine import EngineSettings
from .prompts import ImagePolicy
from .usage import Prices


@dataclass(frozen=True)
class ModelConfig:
    """A model entry of params.yaml, parsed once (see the module docstring)."""

    name: str
    settings: Mapping[str, Any]
    kind: str  # "offline", "api" or "local": the backend class's kind
    engine: EngineSettings
    images: ImagePolicy
    prices: Prices | None
    batch: BatchSettings
    batch_prices: Prices | None
    max_output_tokens: int

    @classmethod
    def parse(cls, name: str, settings: Mapping[str, Any], *, retry_refusals: bool = False) -> "ModelConfig":
        """Parse a validated ``models.<name>`` entry (a :class:`ConfigError` names the bad key)."""
        backend = settings.get("backend")
        if not isinstance(backend, str):
            raise ConfigError(f"models.{name}.backend is missing")
        kind = registry.kind_of(backend)
        max_out = registry.max_output_tokens(settings, name)
        batch = BatchSettings.from_settings(settings, name)
        return cls(
            name=name,
            settings=MappingProxyType(dict(settings)),
            kind=kind,
            engine=EngineSettings.from_settings(settings, name, kind=kind, retry_refusals=retry_refusals),
            images=ImagePolicy.from_settings(settings, name),
            prices=Prices.from_settings(settings, name),
            batch=batch,
            batch_prices=batch_prices(settings, name),
            max_output_tokens=max_out,
        )

    @classmethod
    def from_params(cls, params: Mapping[str, Any], name: str, source: str = "params.yaml") -> "ModelConfig":
        """``models.<name>`` of a loaded params.yaml (validated there), parsed."""
        from ..config import model_settings

        return cls.parse(name, model_settings(params, name, source))

    # -- the few plain settings the job side reads by name -------------------------------
    @property
    def backend(self) -> str:
        return str(self.settings["backend"])

    @property
    def provider(self) -> str | None:
        return self.settings.get("provider")

    @property
    def model_id(self) -> str | None:
        return self.settings.get("model_id")

    @property
    def api_key_env(self) -> str | None:
        return self.settings.get("api_key_env")

    @property
    def prompt_template(self) -> str | None:
        """The entry's own ``prompt_template`` (it wins over ``prompt.templates``), or None."""
        return self.settings.get("prompt_template") or None

    # -- derived configs ---------------------------------------------------------------------
    def retrying_refusals(self, retry: bool = True) -> "ModelConfig":
        """The same model with refused questions sent again (``--retry-refusals``; a params
        entry's ``retry_refusals: true`` stays on)."""
        if not retry or self.engine.retry_refusals:
            return self
        return dataclasses.replace(self, engine=dataclasses.replace(self.engine, retry_refusals=retry))

    def without(self, *keys: str) -> "ModelConfig":
        """The entry without ``keys`` (e.g. ``prompt_template`` where a job's template must win), parsed again."""
        rest = {k: v for k, v in self.settings.items() if k not in keys}
        return ModelConfig.parse(self.name, rest, retry_refusals=self.engine.retry_refusals)


def as_config(name: str, settings: "Mapping[str, Any] | ModelConfig") -> ModelConfig:
    """``settings`` when it is parsed already; else the entry parsed (library callers and tests
    may pass a plain mapping: it is parsed here, once, at the entry point)."""
    if isinstance(settings, ModelConfig):
        return settings
    return ModelConfig.parse(name, settings)
