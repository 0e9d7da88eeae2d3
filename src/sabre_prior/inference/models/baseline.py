"""Offline reference models: no network, no GPU, deterministic.

Strategies (``strategy`` in the model's settings):

* ``random`` - a uniformly random valid answer (yes/no, a count 0-10, an
  option letter), seeded by ``seed`` and the question id, so the answer to a
  question never depends on the order or the subset of questions run;
* ``always_yes`` / ``always_no`` - a constant answer;
* ``prior`` - answers as a model that trusts world priors over the image: yes
  to the familiar source object / normal material and no to the unexpected
  target / counterfactual material on both images, the canonical count
  (``canonical_count`` column) and the option the wording suggests
  (``suggested_option`` column);
* ``oracle`` - the gold answer (a sanity check of the scoring path: 100%).

Under the paper's prompt (``screening_v1``) in the main run these answers are the whole story.
So that the demo's prompt-sensitivity and stability tables have something to show (issue 21),
the baselines also behave like hosted models do, deterministically:

* another template (``bare_v1``, ``format_v1``) re-seeds ``random`` by the template; without a
  stated answer format (``bare_v1``) ``random`` answers 1 in 8 questions and ``prior`` 1 in 6 with
  a sentence that holds no yes/no, count or option (*unparseable*);
* a stability-audit repeat ``r > 0`` re-draws 1 in 5 of ``random``'s answers (seeded by ``r``);
  the other strategies answer the same every time;
* at ``batch_size: 1`` (the batch-invariance audit asks so, :mod:`sabre_prior.batch_audit`; issue 34)
  ``random`` re-draws 1 in 10 of its answers (seeded by the question), as a model whose batched GPU
  kernels round differently from its unbatched ones would: the demo's batch-invariance table and
  figure then show flips.  At any other batch size (the main run's) its answers do not change.
"""

from __future__ import annotations

import hashlib
import logging
import random
from typing import Any, Mapping, Sequence

from ... import contracts as C
from ...errors import ConfigError
from ...options import options_mapping
from .base import Backend, Completion, Query

log = logging.getLogger(__name__)

#: The paper's prompt: the baselines' main-table answers.
MAIN_TEMPLATE = "screening_v1"

STRATEGIES = ("random", "always_yes", "always_no", "prior", "oracle")

_PRIOR_YES_PROBES = {"base_source", "edited_source", "base_normal", "edited_normal"}


def _rng(seed: int, qid: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}\x00{qid}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


class BaselineBackend(Backend):
    kind = "offline"

    def __init__(self, name: str, settings: Mapping[str, Any]) -> None:
        super().__init__(name, settings)
        strategy = settings.get("strategy")
        if strategy not in STRATEGIES:
            raise ConfigError(f"models.{name}.strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
        self.strategy: str = strategy
        self.seed = int(settings.get("seed", 0))
        self.unbatched = settings.get("batch_size") == 1  # the documented batch effect (module docstring)
        self._warned: set[str] = set()

    def complete_batch(self, queries: Sequence[Query]) -> list[Completion]:
        return [Completion(text=self.answer(q)) for q in queries]

    def _warn_once(self, key: str, msg: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(msg)

    def answer(self, q: Query) -> str:
        if self.strategy in ("random", "prior") and q.template == "bare_v1":
            rate = 8 if self.strategy == "random" else 6
            if _rng(self.seed, f"{q.id}\x00unparseable").randrange(rate) == 0:
                return "It is hard to say from this picture."
        return self._answer(q)

    def _answer(self, q: Query) -> str:
        row = q.row
        eval_type = str(row.get(C.COL_EVAL_TYPE) or "")
        s = self.strategy
        if s == "oracle":
            return str(row.get(C.COL_ANSWER, ""))
        if s == "always_yes":
            return "Yes."
        if s == "always_no":
            return "No."
        if s == "random":
            rng = _rng(self.seed, q.id if q.template in ("", MAIN_TEMPLATE) else f"{q.id}\x00{q.template}")
            if q.repeat and _rng(self.seed, f"{q.id}\x00repeat{q.repeat}").randrange(5) == 0:
                rng = _rng(self.seed, f"{q.id}\x00redraw{q.repeat}")
            if self.unbatched and _rng(self.seed, f"{q.id}\x00batch1").randrange(10) == 0:
                rng = _rng(self.seed, f"{q.id}\x00batch1-redraw")
            if eval_type == "count_exact":
                return str(rng.randint(0, 10))
            if eval_type in ("choice_exact", "multiple_choice_exact"):
                letters = sorted(options_mapping(row.get(C.COL_OPTIONS))) or list(C.OPTION_LETTERS)
                return rng.choice(letters)
            return rng.choice(["Yes.", "No."])
        # prior
        if eval_type == "yes_no_exact":
            probe = str(row.get(C.COL_PROBE) or "")
            if not probe:
                self._warn_once("probe", f"{self.name}: rows without a probe column; the prior baseline answers yes")
                return "Yes."
            return "Yes." if probe in _PRIOR_YES_PROBES else "No."
        if eval_type == "count_exact":
            count = row.get(C.COL_CANONICAL_COUNT)
            if count is None or count == "":
                self._warn_once(
                    "count",
                    f"{self.name}: the data has no {C.COL_CANONICAL_COUNT!r} column; the prior baseline cannot answer counts",
                )
                return ""
            return str(count)
        if eval_type in ("choice_exact", "multiple_choice_exact"):
            suggested = row.get(C.COL_SUGGESTED_OPTION)
            if suggested:
                return str(suggested)
            self._warn_once(
                "choice",
                f"{self.name}: the data has no {C.COL_SUGGESTED_OPTION!r} column; the prior baseline answers A",
            )
            return "A"
        return ""
