"""Data contracts of the pipeline, written down once.

Every column name, JSON key and path that more than one module (or the
Snakemake rules, or dvc.yaml) relies on is defined here.  The README's
"Data contracts" section documents the same names for users.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

# --------------------------------------------------------------------------
# The benchmark
# --------------------------------------------------------------------------

SPLITS: Final[tuple[str, ...]] = ("context", "texture", "attribute", "language")
PAIRED_SPLITS: Final[tuple[str, ...]] = ("context", "texture")

HUB_REPO_ID: Final[str] = "Zesearch/SABRE-Prior"
HUB_SPLIT: Final[str] = "test"

#: Official sizes of the real dataset: (images, questions).
OFFICIAL_COUNTS: Final[dict[str, tuple[int, int]]] = {
    "context": (200, 400),
    "texture": (200, 400),
    "attribute": (100, 100),
    "language": (100, 100),
}

#: Probe -> (image role, expected answer) for the paired splits, in the
#: canonical order used for tables and figures.
PROBES: Final[dict[str, dict[str, tuple[str, str]]]] = {
    "context": {
        "base_source": ("base", "yes"),
        "base_target": ("base", "no"),
        "edited_source": ("edited", "no"),
        "edited_target": ("edited", "yes"),
    },
    "texture": {
        "base_normal": ("base", "yes"),
        "base_counterfactual": ("base", "no"),
        "edited_normal": ("edited", "no"),
        "edited_counterfactual": ("edited", "yes"),
    },
}

#: Scoring contract (``eval_type``) of each split in the real dataset.
SPLIT_EVAL_TYPE: Final[dict[str, str]] = {
    "context": "yes_no_exact",
    "texture": "yes_no_exact",
    "attribute": "count_exact",
    "language": "multiple_choice_exact",
}

# --------------------------------------------------------------------------
# Columns
# --------------------------------------------------------------------------

COL_ID: Final = "id"
COL_IMAGE: Final = "image"
COL_SUBSET: Final = "subset"
COL_QUESTION: Final = "question"
COL_ANSWER: Final = "answer"
COL_EVAL_TYPE: Final = "eval_type"
COL_QUESTION_TYPE: Final = "question_type"
COL_PAIR_ID: Final = "pair_id"
COL_PROBE: Final = "probe"
COL_OPTIONS: Final = "options"
COL_ANSWER_TEXT: Final = "answer_text"
COL_FILE_NAME: Final = "file_name"

#: Prior-relevant columns written by the demo benchmark.  The real dataset
#: may or may not have them (its extra columns are undocumented); analysis
#: that needs them degrades gracefully when absent.
COL_CANONICAL_COUNT: Final = "canonical_count"  # attribute: count a prior would give
COL_SUGGESTED_OPTION: Final = "suggested_option"  # language: option the wording suggests
COL_UNKNOWN_OPTION: Final = "unknown_option"  # language: the "cannot be determined" option

COMMON_COLUMNS: Final[tuple[str, ...]] = (
    COL_ID,
    COL_IMAGE,
    COL_SUBSET,
    COL_QUESTION,
    COL_ANSWER,
    COL_EVAL_TYPE,
)
SPLIT_COLUMNS: Final[dict[str, tuple[str, ...]]] = {
    "context": COMMON_COLUMNS + (COL_PAIR_ID, COL_PROBE),
    "texture": COMMON_COLUMNS + (COL_PAIR_ID, COL_PROBE),
    "attribute": COMMON_COLUMNS,
    "language": COMMON_COLUMNS + (COL_OPTIONS, COL_ANSWER_TEXT),
}

OPTION_LETTERS: Final[tuple[str, ...]] = ("A", "B", "C", "D")

# --------------------------------------------------------------------------
# Prediction files (the official format) and traces
# --------------------------------------------------------------------------

PRED_ID: Final = "id"
PRED_PREDICTION: Final = "prediction"

#: Keys of one line of a per-question trace (``results/traces/<model>/<split>.jsonl``).
TRACE_KEYS: Final[tuple[str, ...]] = (
    "id",
    "split",
    "pair_id",  # null outside the paired splits
    "probe",  # null outside the paired splits
    "eval_type",
    "prediction",  # raw response (null when missing)
    "normalized_prediction",
    "answer",  # raw expected answer
    "normalized_answer",
    "parsed",  # the contract's extractor found a valid answer (yes/no word, count, option)
    "missing",  # no prediction line for this question
    "correct",
    "outcome",  # one of OUTCOMES (see below)
    "chance",  # probability that a uniform guess is correct (0 for free-text types)
)

#: What became of one question (``outcome`` in traces, counted per split in the metrics), in this
#: precedence: ``refused`` (the provider or model declined; no prediction), ``failed`` (no
#: prediction for another reason: no answer after all retries, or a prediction file without the
#: line), ``correct``, ``truncated`` (not correct and stopped at the output-token limit),
#: ``unparseable`` (an answer, but the contract's extractor read no yes/no, count or option from it),
#: ``wrong``.  Every outcome but correct and wrong is a *non-answer*.
OUTCOMES: Final[tuple[str, ...]] = ("correct", "wrong", "unparseable", "refused", "failed", "truncated")
NON_ANSWERS: Final[tuple[str, ...]] = ("unparseable", "refused", "failed", "truncated")

# --------------------------------------------------------------------------
# Metrics JSON (``sabre evaluate`` / ``results/metrics/<model>.json``)
# --------------------------------------------------------------------------
# {
#   "<split>": {"accuracy": float 0-1, "correct": int, "total": int,
#               "missing": int,
#               "refused": int,  # (with usage summaries) questions the provider refused: no prediction
#               "outcomes": {outcome: int},  # every question's outcome (OUTCOMES), counted
#               "nonanswer": int, "nonanswer_rate": float,  # questions whose outcome is a non-answer
#               # context/texture only:
#               "question_accuracy": float, "probe_accuracy": {probe: float}},
#   ...,
#   "macro_accuracy": float
# }
M_ACCURACY: Final = "accuracy"
M_CORRECT: Final = "correct"
M_TOTAL: Final = "total"
M_MISSING: Final = "missing"
M_REFUSED: Final = "refused"
M_OUTCOMES: Final = "outcomes"
M_NONANSWER: Final = "nonanswer"
M_NONANSWER_RATE: Final = "nonanswer_rate"
M_QUESTION_ACCURACY: Final = "question_accuracy"
M_PROBE_ACCURACY: Final = "probe_accuracy"
M_MACRO: Final = "macro_accuracy"

# --------------------------------------------------------------------------
# Confidence-interval JSON (``results/intervals/<model>.json``), fractions 0-1:
# {"<split>": {"estimate": f, "low": f, "high": f}, ...,
#  "macro": {"estimate": f, "low": f, "high": f},
#  "confidence": 0.95, "resamples": int, "seed": int}
# --------------------------------------------------------------------------
I_ESTIMATE: Final = "estimate"
I_LOW: Final = "low"
I_HIGH: Final = "high"
I_MACRO: Final = "macro"
I_CONFIDENCE: Final = "confidence"
I_RESAMPLES: Final = "resamples"
I_SEED: Final = "seed"

# --------------------------------------------------------------------------
# Paths (relative to the project root; Snakemake rules and dvc.yaml use the
# same patterns)
# --------------------------------------------------------------------------

DEMO_DIR: Final = "data/demo"
PARQUET_DIR: Final = "data/parquet"
PREDICTIONS_DIR: Final = "results/predictions"
METRICS_DIR: Final = "results/metrics"
TRACES_DIR: Final = "results/traces"
TABLES_DIR: Final = "results/tables"
FIGURES_DIR: Final = "results/figures"
LOGS_DIR: Final = "results/logs"
INTERVALS_DIR: Final = "results/intervals"
JOURNAL_DIR: Final = ".sabre/journal"
#: Per model/split usage summaries (calls, tokens, cost; deterministic content).
USAGE_DIR: Final = "results/usage"

#: The figures the HTML report shows (results/figures/<stem>.png), in its order.
REPORT_FIGURES: Final = (
    "split_accuracy", "probe_accuracy", "pair_outcomes", "prompt_sensitivity", "backend_parity", "batch_invariance",
)  # fmt: skip
#: The main figures: ``results/figures/<stem>.{png,pdf}``.
SPLIT_FIGURE: Final = "split_accuracy"
PROBE_FIGURE: Final = "probe_accuracy"
FIGURE_STEMS: Final[tuple[str, ...]] = (SPLIT_FIGURE, PROBE_FIGURE)
#: The world-prior diagnostics: tables in TABLES_DIR, the figure stem in FIGURES_DIR, the JSON.
DIAGNOSTIC_TABLES: Final[tuple[str, ...]] = (
    "diagnostics.md",
    "diagnostics_pair_outcomes.csv",
    "diagnostics_probes.csv",
    "diagnostics_attribute.csv",
    "diagnostics_language.csv",
    "diagnostics_parsing.csv",
)
PAIR_OUTCOMES_FIGURE: Final = "pair_outcomes"
#: Machine-readable analysis outputs (the diagnostics JSON) live here.
ANALYSIS_DIR: Final = "results/analysis"
DIAGNOSTICS_JSON: Final = f"{ANALYSIS_DIR}/diagnostics.json"
#: The static HTML report.
REPORT_PATH: Final = "results/report/index.html"
#: The run manifest and the plot data for `dvc plots`.
MANIFEST_PATH: Final = "results/manifest.json"
PLOT_DATA_PATH: Final = "results/plots/split_accuracy.csv"

MAIN_TABLE_COLUMNS: Final[tuple[str, ...]] = (
    "model",
    "context",
    "texture",
    "attribute",
    "language",
    "macro",
)


def parquet_path(split: str, root: Path | str = ".") -> Path:
    return Path(root) / PARQUET_DIR / f"{split}.parquet"


def predictions_path(model: str, split: str, root: Path | str = ".") -> Path:
    return Path(root) / PREDICTIONS_DIR / model / f"{split}.jsonl"


def metrics_path(model: str, root: Path | str = ".") -> Path:
    return Path(root) / METRICS_DIR / f"{model}.json"


def intervals_path(model: str, root: Path | str = ".") -> Path:
    return Path(root) / INTERVALS_DIR / f"{model}.json"


def trace_path(model: str, split: str, root: Path | str = ".") -> Path:
    return Path(root) / TRACES_DIR / model / f"{split}.jsonl"


def usage_path(model: str, split: str, root: Path | str = ".") -> Path:
    return Path(root) / USAGE_DIR / model / f"{split}.json"
