"""The pipeline, declared once: every stage's command, inputs, outputs, params and code.

:data:`STAGES` is the single declaration. The Snakemake rules (``workflow/rules/*.smk``) take
their inputs, outputs, log and shell command from it (:class:`Pipeline`), and ``sabre generate``
renders it into ``dvc.yaml`` (:func:`render_dvc_yaml`): one templated stage per rule (``foreach``
over ``splits`` or ``models``, ``matrix`` over both), so adding a model to ``params.yaml`` needs
no regeneration. A test regenerates ``dvc.yaml`` and compares it with the committed file.

Path templates use ``{model}`` / ``{split}`` for the stage's own item and ``{*model}`` /
``{*split}`` for "every model" / "every split": Snakemake expands the starred names into the
files; DVC depends on (or tracks) the folder above the first starred name.

What each tool sees of a job: its data inputs and its *recipe* (``.sabre/recipes/...``,
:meth:`Pipeline.recipe`: the command, the values of the settings it reads (``params``), the blob
ids of the code its command imports). DVC depends on the recipe file instead of params and code
files; Snakemake gets ``ancient()`` inputs or a gate from :mod:`sabre_prior.repro.dagsync`,
which compares each job's made record with its recipe (docs/orchestration.md).

Where the data comes from depends on ``dataset.source`` (:func:`source_kind`): the demo folder
``data/demo`` (stage ``demo_data``), the card and the split's folder of a local mirror, or for a
hub id the split's files at the resolved revision (their digest is in the fetch job's recipe).
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .. import contracts as C
from ..report.style import caption_path

PACKAGE_DIR = "src/sabre_prior"
STAMP_DIR = ".sabre/recipes"  # one recipe per job (sabre_prior.repro.state)
LOG_DIR = "results/logs"
DVC_YAML = "dvc.yaml"
_SHA = re.compile(r"^[0-9a-f]{40}$")
#: The pipeline's dimensions and the params key their values come from (a DVC foreach/matrix axis
#: and a Snakemake wildcard each): models, splits, prompt templates and audit repeats (issue 21).
DIMENSIONS: dict[str, str] = {"model": "models", "split": "splits", "template": "prompt.templates", "repeat": "audit.repeats"}
#: Dimensions whose values are derived from a setting that is not itself their list: the audit's
#: repeats 1..k-1 from ``audit.repeats: k`` (repeat 0 is the main run). DVC's templating has no
#: range (a ``foreach``/``matrix`` axis is a list, or a ``${...}`` naming one: "dvc.yaml",
#: https://dvc.org/doc/user-guide/project-structure/dvcyaml-files#matrix-stages), so ``sabre generate``
#: writes their values into dvc.yaml's matrix and the ``recipes`` stage refuses a dvc.yaml made
#: for other values (as for another ``dataset.source``); the Snakefile regenerates it.
DERIVED: frozenset[str] = frozenset({"repeat"})
_DIM = "|".join(DIMENSIONS)
_STAR = re.compile(r"\{\*(" + _DIM + r")\}")
_ITEM = re.compile(r"\{(" + _DIM + r")\}")
_PARAM = re.compile(r"\{p:([A-Za-z0-9_.]+)\}")


@dataclass(frozen=True)
class Report:
    """Where an output appears in `snakemake --report`, and its caption: a sentence or two saying what
    it shows. The caption is also the text under a figure in the HTML report; `sabre generate`
    writes it to ``resources/caption_<stem>.rst``, the file Snakemake's ``report(caption=...)`` reads.
    Outputs with the same stem (``x.md``, ``x.png``) share one caption."""

    category: str
    subcategory: str
    caption: str


@dataclass(frozen=True)
class Out:
    """One output: a plain ``out``, a ``metric`` or a ``plot`` (DVC), optionally in Snakemake's report."""

    path: str
    kind: str = "out"
    report: Report | None = None  # shown in `snakemake --report` (and, a figure, in the HTML report)
    plot: Mapping[str, str] | None = None  # `dvc plots` properties
    directory: bool = False  # a folder output (Snakemake's directory())


@dataclass(frozen=True)
class Stage:
    name: str
    over: tuple[str, ...]  # names of DIMENSIONS: (), ("split",), ("model",), ("model", "split"), ("template", "model")
    cmd: str  # {model}, {split}, {p:<params key>}
    deps: tuple[str, ...]
    outs: tuple[Out, ...]
    params: tuple[str, ...] = ()  # the settings the job reads ("models.{model}!display_name": without that field)

    @property
    def log(self) -> str:
        if not self.over:
            return f"{LOG_DIR}/{self.name}.log"
        return f"{LOG_DIR}/{self.name}/" + "/".join("{" + o + "}" for o in self.over) + ".log"

    @property
    def stamp(self) -> str:
        if not self.over:
            return f"{STAMP_DIR}/{self.name}.json"
        return f"{STAMP_DIR}/{self.name}/" + "/".join("{" + o + "}" for o in self.over) + ".json"

    def command(self) -> str:
        # the CLI writes the stage's log itself (`sabre --log`, as `> log 2>&1` did) and, when the stage
        # fails, also prints the log's last lines on stderr: `dvc repro` shows why, not only "failed"
        return "sabre --log " + self.log + self.cmd.removeprefix("sabre")


_AGG_PARAMS = ("models", "splits")
_BOOTSTRAP = ("analysis.bootstrap_resamples", "analysis.seed", "analysis.confidence")
_TRACES = "results/traces/{*model}/{*split}.jsonl"
_PARQUET = "data/parquet/{*split}.parquet"
_METRICS = "results/metrics/{*model}.json"
_INTERVALS = "results/intervals/{*model}.json"
FIGURES = ("split_accuracy", "probe_accuracy")
DIAGNOSTIC_TABLES = (
    "diagnostics_pair_outcomes.csv",
    "diagnostics_probes.csv",
    "diagnostics_attribute.csv",
    "diagnostics_language.csv",
    "diagnostics_parsing.csv",
)
REPORT_FIGURES = (*FIGURES, "pair_outcomes", "prompt_sensitivity")

#: Captions shared by outputs of one stem (a table's .md and .csv, a stage's table and figure).
_MAIN_CAPTION = (
    "The main table: accuracy in percent of each model on each split (n pairs or questions in the header) and "
    "the macro average, with bootstrap confidence intervals in brackets where computed; the best value of a "
    "column is bold only when one model alone has it."
)
_SENSITIVITY_CAPTION = (
    "Prompt sensitivity: per model, the macro accuracy under each prompt template with its bootstrap interval, "
    "and the paired bootstrap interval of each template's difference from the main template (the first of "
    "prompt.templates, the one the main table uses)."
)
#: The accuracy figures' captions (stage `figures`).
_FIGURE_CAPTIONS = {
    "split_accuracy": (
        "Accuracy of each model (bars, in the model's colour) on each configured split and their unweighted "
        "mean (macro average, right of the dashed line), in percent. Context and texture score a pair as right "
        "only when all four of its probes are; attribute and language score each question. Error bars: the "
        "bootstrap confidence interval; under each split, n: the pairs or questions its score counts."
    ),
    "probe_accuracy": (
        "The paired splits (context, texture) probe by probe: the accuracy of each model on each of a pair's "
        "four probes (base and edited image, each asked about the source and the target object or material) "
        "and, on the grey background, the strict pair accuracy (all four probes right) with its bootstrap "
        "confidence interval and n, the number of pairs."
    ),
}

#: The pipeline. Order: producers before consumers.
STAGES: tuple[Stage, ...] = (
    Stage(
        "demo_data",
        (),
        "sabre demo-data --output data/demo --scale {p:dataset.demo.scale} --seed {p:dataset.demo.seed}",
        deps=(),
        outs=(Out(C.DEMO_DIR, directory=True),),
        params=("dataset.demo.scale", "dataset.demo.seed"),
    ),
    Stage(
        "fetch",
        ("split",),
        "sabre fetch --split {split} --output data/parquet/{split}.parquet",
        deps=(),  # the source's data: see Pipeline.fetch_inputs / _dvc_fetch
        outs=(Out("data/parquet/{split}.parquet"),),
        params=("dataset.source", "dataset.revision"),
    ),
    Stage(
        "predict",
        ("model", "split"),
        "sabre predict --model {model} --split {split} --data data/parquet/{split}.parquet"
        " --output results/predictions/{model}/{split}.jsonl --usage results/usage/{model}/{split}.json",
        deps=("data/parquet/{split}.parquet",),
        outs=(Out("results/predictions/{model}/{split}.jsonl"), Out("results/usage/{model}/{split}.json")),
        params=("models.{model}!display_name", "prompt.templates.0"),  # the main template only: adding one reruns nothing here
    ),
    # Prompt sensitivity (issue 21): every template of prompt.templates, per model, all splits in one
    # job; the main predictions come first, so that the main template's answers (and any answer
    # the main journal holds) are reused, never paid twice.
    Stage(
        "prompt_run",
        ("template", "model"),
        "sabre prompt-run --template {template} --model {model} --data data/parquet --outdir results/prompts/{template}/{model}",
        deps=(_PARQUET, "results/predictions/{model}/{*split}.jsonl"),
        outs=(
            Out("results/prompts/{template}/{model}/predictions/{*split}.jsonl"),
            Out("results/prompts/{template}/{model}/usage/{*split}.json"),
            Out("results/prompts/{template}/{model}/traces/{*split}.jsonl"),
            Out("results/prompts/{template}/{model}/metrics.json"),
        ),
        params=("models.{model}", "splits"),
    ),
    Stage(
        "evaluate",
        ("model",),
        "sabre evaluate --predictions results/predictions/{model} --data data/parquet --params params.yaml"
        " --output results/metrics/{model}.json --trace-dir results/traces/{model} --usage results/usage/{model}",
        # the usage summaries name the refused questions (counted in the metrics' `refused`)
        deps=("results/predictions/{model}/{*split}.jsonl", _PARQUET, "results/usage/{model}/{*split}.json"),
        outs=(Out("results/metrics/{model}.json", kind="metric"), Out("results/traces/{model}/{*split}.jsonl")),
        params=("splits",),
    ),
    Stage(
        "intervals",
        ("model",),
        "sabre intervals --model {model} --traces-dir results/traces/{model} --metrics results/metrics/{model}.json"
        " --output results/intervals/{model}.json",
        deps=("results/traces/{model}/{*split}.jsonl", "results/metrics/{model}.json"),
        outs=(Out("results/intervals/{model}.json"),),
        params=("splits", *_BOOTSTRAP),
    ),
    Stage(
        "tables",
        (),
        "sabre tables --metrics-dir results/metrics --intervals-dir results/intervals --data data/parquet"
        " --outdir results/tables",
        deps=(_METRICS, _INTERVALS, _PARQUET),
        outs=(
            Out("results/tables/main_results.md", report=Report("Tables", "Main results", _MAIN_CAPTION)),
            Out("results/tables/main_results.csv", report=Report("Tables", "Main results", _MAIN_CAPTION)),
            Out("results/tables/main_results.tex"),
            Out(
                "results/tables/main_results_ci.csv",
                report=Report("Tables", "Main results", (
                    "The main table's bootstrap confidence intervals in long form: one row per model and split "
                    "(and the macro average), estimate, low and high in percent."
                )),
            ),
            Out(
                "results/tables/failure_aware.md",
                report=Report("Tables", "Failure-aware scores", (
                    "Failure-aware scores: beside each model's official score on each split (non-answers "
                    "counted as wrong, as the contract says), the score with non-answers left out and with "
                    "non-answers answered at chance, each with its bootstrap interval; a model or split whose "
                    "share of non-answers (unparseable, refused, failed or truncated) exceeds "
                    "analysis.report.max_nonanswer_rate is flagged with its count."
                )),
            ),
            Out("results/tables/failure_aware.csv"),
        ),
        params=(*_AGG_PARAMS, "analysis.report.max_nonanswer_rate"),  # the data source shown is what the Parquet files record
    ),
    Stage(
        "figures",
        (),
        "sabre figures --metrics-dir results/metrics --intervals-dir results/intervals --data data/parquet"
        " --outdir results/figures",
        deps=(_METRICS, _INTERVALS, _PARQUET),
        outs=tuple(
            Out(f"results/figures/{fig}.{ext}", report=Report("Figures", "Accuracy", _FIGURE_CAPTIONS[fig]) if ext == "png" else None)
            for fig in FIGURES
            for ext in ("png", "pdf")
        ),
        params=_AGG_PARAMS,  # the data source shown is what the Parquet files record
    ),
    Stage(
        "compare",
        (),
        "sabre compare --traces-dir results/traces --outdir results/tables",
        deps=(_TRACES,),
        outs=(
            Out(
                "results/tables/model_comparison.md",
                report=Report("Analysis", "Paired model comparison", (
                    "Every two models compared on the same questions: the difference in accuracy (percentage "
                    "points) with a paired bootstrap interval, the units only one of them got right, and exact "
                    "McNemar p-values (Holm-adjusted over the table)."
                )),
            ),
            Out("results/tables/model_comparison.csv"),
        ),
        params=(*_AGG_PARAMS, *_BOOTSTRAP, "analysis.report.max_nonanswer_rate"),
    ),
    Stage(
        "diagnose",
        (),
        "sabre diagnose --traces-dir results/traces --data data/parquet --tables-dir results/tables"
        " --figures-dir results/figures --json results/analysis/diagnostics.json",
        deps=(_TRACES, _PARQUET),
        outs=(
            Out("results/analysis/diagnostics.json"),
            Out(
                "results/tables/diagnostics.md",
                report=Report("Analysis", "World-prior diagnostics", (
                    "World-prior diagnostics per model: how each pair's four probes end, the yes-rate, counting"
                    " errors on the attribute split, the options chosen on the language split, and the answers "
                    "the scoring could not parse."
                )),
            ),
            *(Out(f"results/tables/{name}") for name in DIAGNOSTIC_TABLES),
            Out(
                "results/figures/pair_outcomes.png",
                report=Report("Figures", "World-prior diagnostics", (
                    "How each model's pairs end (context and texture), as shares of the n pairs: all four "
                    "probes right; prior-following (right on the base image, and on the edited image answering "
                    "as if the familiar object or material were still there); always yes; always no; or another"
                    " mix. Each model's label carries its colour swatch from the accuracy figures; the bar "
                    "colours are the outcome classes."
                )),
            ),
            Out("results/figures/pair_outcomes.pdf"),
        ),
        params=(*_AGG_PARAMS, "analysis.report.max_nonanswer_rate"),
    ),
    Stage(
        "paper_compare",
        (),
        "sabre paper-compare --intervals-dir results/intervals --outdir results/tables",
        deps=(_INTERVALS,),
        outs=(
            Out(
                "results/tables/paper_comparison.md",
                report=Report("Analysis", "Comparison with the paper", (
                    "The models that name a model of the paper (paper_name in params.yaml): the paper's "
                    "reported accuracy beside the reproduced one and its bootstrap interval, and whether the "
                    "reported value lies inside it."
                )),
            ),
            Out("results/tables/paper_comparison.csv"),
        ),
        params=(*_AGG_PARAMS, "analysis.report.max_nonanswer_rate"),
    ),
    # API stability audit (issue 21): repeat r (1..k-1) of a fixed subset, one job per model and
    # repeat (none while audit.repeats is 1); repeat 0 is the main run's traces. The job does not
    # read audit.repeats: raising it adds jobs and re-runs none of the earlier repeats.
    Stage(
        "audit_run",
        ("model", "repeat"),
        "sabre audit-run --model {model} --repeat {repeat} --data data/parquet --output results/audit/{model}/r{repeat}.json",
        deps=(_PARQUET,),
        outs=(Out("results/audit/{model}/r{repeat}.json"),),
        params=("models.{model}", "splits", "audit.questions", "audit.seed", "prompt.templates.0"),
    ),
    # the per-model aggregation: repeat 0 and every repeat's answers -> flip rate, accuracy across repeats
    Stage(
        "audit",
        ("model",),
        "sabre audit --model {model} --data data/parquet --traces-dir results/traces/{model}"
        " --runs-dir results/audit/{model} --output results/audit/{model}.json",
        deps=(_PARQUET, "results/traces/{model}/{*split}.jsonl", "results/audit/{model}/r{*repeat}.json"),
        outs=(Out("results/audit/{model}.json"),),
        params=("splits", "audit", "prompt.templates.0", *_BOOTSTRAP),  # asks nothing: no model setting
    ),
    Stage(
        "stability",
        (),
        "sabre stability --audit-dir results/audit --usage-dir results/usage --prompts-dir results/prompts"
        " --outdir results/tables",
        deps=(
            "results/audit/{*model}.json",
            "results/usage/{*model}/{*split}.json",
            "results/prompts/{*template}/{*model}/usage/{*split}.json",
        ),
        outs=(
            Out(
                "results/tables/stability.md",
                report=Report("Analysis", "API stability", (
                    "API stability audit: per model, the share of re-asked questions whose normalized answer "
                    "differs across repeats (flip rate, with its interval), the accuracy's mean and spread "
                    "across repeats, and the model versions the provider said served the answers (a change from"
                    " the recorded one is drift)."
                )),
            ),
            Out("results/tables/stability.csv"),
            Out("results/tables/cost.csv"),  # cost by model, template, repeat and split
        ),
        params=(*_AGG_PARAMS, "audit", "prompt.templates", "analysis.report.max_nonanswer_rate"),
    ),
    Stage(
        "prompt_sensitivity",
        (),
        "sabre prompt-sensitivity --prompts-dir results/prompts --outdir results/tables --figures-dir results/figures",
        deps=("results/prompts/{*template}/{*model}/traces/{*split}.jsonl",),
        outs=(
            Out("results/tables/prompt_sensitivity.md", report=Report("Analysis", "Prompt sensitivity", _SENSITIVITY_CAPTION)),
            Out("results/tables/prompt_sensitivity.csv"),
            Out("results/figures/prompt_sensitivity.png", report=Report("Figures", "Prompt sensitivity", _SENSITIVITY_CAPTION)),
            Out("results/figures/prompt_sensitivity.pdf"),
        ),
        params=(*_AGG_PARAMS, "prompt.templates", *_BOOTSTRAP),
    ),
    Stage(
        "html_report",
        (),
        "sabre report --traces-dir results/traces --data data/parquet --intervals-dir results/intervals"
        " --diagnostics results/analysis/diagnostics.json --comparison results/tables/model_comparison.csv"
        " --paper results/tables/paper_comparison.csv"
        + " --sensitivity results/tables/prompt_sensitivity.csv --stability results/tables/stability.csv"
        + "".join(f" --figure results/figures/{fig}.png" for fig in REPORT_FIGURES)
        + " --output results/report/index.html",
        deps=(
            _TRACES,
            _PARQUET,
            _INTERVALS,
            "results/analysis/diagnostics.json",
            "results/tables/model_comparison.csv",
            "results/tables/paper_comparison.csv",
            "results/tables/prompt_sensitivity.csv",
            "results/tables/stability.csv",
            *(f"results/figures/{fig}.png" for fig in REPORT_FIGURES),
        ),
        outs=(Out("results/report/index.html"),),
        params=(*_AGG_PARAMS, "analysis.report"),  # the data source shown is what the Parquet files record
    ),
    Stage(
        "manifest",
        (),
        "sabre manifest --output results/manifest.json --data data/parquet --usage-dir results/usage",
        deps=(_PARQUET, "results/usage/{*model}/{*split}.json"),  # the served model versions
        outs=(Out("results/manifest.json"),),
        params=("models", "splits", "dataset"),
    ),
    Stage(
        "plot_data",
        (),
        "sabre plot-data --metrics-dir results/metrics --output results/plots/split_accuracy.csv",
        deps=(_METRICS,),
        outs=(
            Out(
                "results/plots/split_accuracy.csv",
                kind="plot",
                plot={
                    "x": "split",
                    "y": "accuracy",
                    "template": "grouped_bars",
                    "title": "Accuracy by split and model (%)",
                    "x_label": "split",
                    "y_label": "accuracy (%)",
                },
            ),
        ),
        params=_AGG_PARAMS,
    ),
)
BY_NAME: dict[str, Stage] = {s.name: s for s in STAGES}


# ---------------------------------------------------------------------------
# Sources
# ---------------------------------------------------------------------------
def source_kind(source: str) -> str:
    """``demo``, ``local`` (an existing directory) or ``hub`` (a repo id)."""
    if source == "demo":
        return "demo"
    path = Path(source).expanduser()
    if path.is_dir() or source.startswith((".", "/", "~")) or source.count("/") != 1:
        return "local"
    return "hub"


def pinned(revision: Any) -> bool:
    """A revision that names one commit (40 hex digits): the same data whenever it is read."""
    return isinstance(revision, str) and bool(_SHA.match(revision))


def local_split_folders(source: str, split: str) -> list[str]:
    """The folders (relative to the source) holding ``split``'s files, from the dataset card."""
    from ..data.fetch import split_folder, split_patterns

    folders = sorted({split_folder(p) for p in split_patterns(source, split)})
    return folders or ["."]


# ---------------------------------------------------------------------------
# Paths
# ---------------------------------------------------------------------------
def expand_star(pattern: str, values: Mapping[str, Sequence[str]]) -> list[str]:
    """``{*model}``/``{*split}`` replaced by every value (the item placeholders are kept)."""
    names = _STAR.findall(pattern)
    if not names:
        return [pattern]
    out = []
    for combo in itertools.product(*(values[n] for n in names)):
        text = pattern
        for n, v in zip(names, combo):
            text = text.replace("{*" + n + "}", v, 1)
        out.append(text)
    return out


def dvc_path(pattern: str) -> str:
    """The path DVC tracks for a pattern: the folder above the first ``{*...}``, else the pattern."""
    match = _STAR.search(pattern)
    if not match:
        return pattern
    prefix = pattern[: match.start()]
    return prefix.rstrip("/") if prefix.endswith("/") else prefix.rsplit("/", 1)[0]


def get_param(params: Mapping[str, Any], key: str) -> Any:
    """The value at a dotted key (a digit part indexes a list: ``prompt.templates.0``); None if absent."""
    node: Any = params
    for part in key.split("."):
        if isinstance(node, list) and part.isdigit():
            if int(part) >= len(node):
                return None
            node = node[int(part)]
            continue
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def templates(params: Mapping[str, Any]) -> list[str]:
    """``prompt.templates`` (the first is the main table's)."""
    from ..config import prompt_templates

    return prompt_templates(params)


def repeats(params: Mapping[str, Any]) -> list[str]:
    """The ``repeat`` dimension: the audit's repeats 1..k-1 of ``audit.repeats: k`` (none while it is 1)."""
    from ..inference.audit import audit_settings

    return [str(r) for r in audit_settings(params).asked]


# ---------------------------------------------------------------------------
# A pipeline for one params.yaml
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Job:
    """One concrete job (a DVC stage instance, e.g. ``predict@random-context``)."""

    stage: Stage
    item: tuple[tuple[str, str], ...]  # (("model", "random"), ("split", "context"))
    command: str
    inputs: tuple[str, ...]  # data inputs, code files, project files
    outputs: tuple[str, ...]
    stamp: str  # the job's recipe file

    @property
    def name(self) -> str:
        if not self.item:
            return self.stage.name
        return self.stage.name + "@" + "-".join(v for _, v in self.item)


@dataclass
class Pipeline:
    """The declaration applied to one configuration (models, splits, source)."""

    params: Mapping[str, Any]
    root: Path = field(default_factory=Path.cwd)
    _inputs: dict[str, list[str]] = field(default_factory=dict, repr=False, compare=False)
    _jobs: list[Job] | None = field(default=None, repr=False, compare=False)
    _closure: Any = field(default=None, repr=False, compare=False)

    @property
    def models(self) -> list[str]:
        return list(self.params["models"])

    @property
    def splits(self) -> list[str]:
        return list(self.params["splits"])

    @property
    def source(self) -> str:
        return str(self.params["dataset"]["source"])

    @property
    def kind(self) -> str:
        return source_kind(self.source)

    @property
    def stages(self) -> list[Stage]:
        """The stages with jobs in this configuration: no ``demo_data`` but for the demo, no
        ``audit_run`` while ``audit.repeats`` is 1 (a dimension without values has no jobs)."""
        values = self.values()
        return [
            s for s in STAGES if (s.name != "demo_data" or self.kind == "demo") and all(values[d] for d in s.over)
        ]

    @property
    def templates(self) -> list[str]:
        return templates(self.params)

    @property
    def repeats(self) -> list[str]:
        return repeats(self.params)

    def values(self) -> dict[str, list[str]]:
        return {"model": self.models, "split": self.splits, "template": self.templates, "repeat": self.repeats}

    # -- Snakemake's view -------------------------------------------------------
    def fetch_inputs(self, split: str) -> list[str]:
        """What the fetch of ``split`` reads: the demo folder, a local mirror's card and split files, or its stamp."""
        if self.kind == "demo":
            return [C.DEMO_DIR]
        if self.kind == "local":
            src = Path(self.source).expanduser()
            files = [str(src / "README.md")]
            for folder in local_split_folders(self.source, split):
                base = src / folder
                if base.is_dir():
                    files += sorted(str(p) for p in base.rglob("*") if p.is_file())
            return files
        return []  # hub: the resolved revision is in the job's stamp

    def inputs(self, stage: Stage) -> list[str]:
        """Snakemake input patterns (item placeholders kept as wildcards): the stage's data, not its
        recipe. Code and params are in the job's recipe (:meth:`recipe`), not among the inputs."""
        cached = self._inputs.get(stage.name)
        if cached is None:
            cached = self._inputs[stage.name] = [p for d in stage.deps for p in expand_star(d, self.values())]
        return list(cached)

    def outputs(self, stage: Stage) -> list[str]:
        return [p for o in stage.outs for p in expand_star(o.path, self.values())]

    def shell(self, stage: Stage) -> str:
        """The command for Snakemake's ``shell:`` (wildcards, params values filled in, other braces escaped)."""
        text = _PARAM.sub(lambda m: str(get_param(self.params, m.group(1))), stage.command())
        text = text.replace("{", "{{").replace("}", "}}")
        return re.sub(r"\{\{(" + _DIM + r")\}\}", r"{wildcards.\1}", text)

    def jobs(self) -> list[Job]:
        """Every job of the pipeline, producers first."""
        if self._jobs is not None:
            return list(self._jobs)
        out = []
        for stage in self.stages:
            for combo in itertools.product(*(self.values()[o] for o in stage.over)):
                item = tuple(zip(stage.over, combo))
                out.append(self.job(stage, dict(item)))
        self._jobs = out
        return list(out)

    def job(self, stage: Stage, item: Mapping[str, str]) -> Job:
        def fill(text: str) -> str:
            return _ITEM.sub(lambda m: item[m.group(1)], text)

        command = _PARAM.sub(lambda m: str(get_param(self.params, m.group(1))), fill(stage.command()))
        inputs = [fill(p) for p in self.inputs(stage)]
        if stage.name == "fetch":
            inputs = [*self.fetch_inputs(item["split"]), *inputs]
        return Job(
            stage=stage,
            item=tuple((k, item[k]) for k in stage.over),
            command=command,
            inputs=tuple(inputs),
            outputs=tuple(fill(p) for p in self.outputs(stage)),
            stamp=fill(stage.stamp),
        )

    def reads(self, job: Job) -> dict[str, Any]:
        """The values of the settings the job reads (``key!field`` leaves ``field`` out)."""
        item = dict(job.item)
        out: dict[str, Any] = {}
        for key in job.stage.params:
            key, _, drop = _ITEM.sub(lambda m: item[m.group(1)], key).partition("!")
            value = get_param(self.params, key)
            if drop and isinstance(value, Mapping):
                value = {k: v for k, v in value.items() if k not in drop.split(",")}
            out[key] = value
        return out

    def closure(self) -> Any:
        from .closure import Closure

        if self._closure is None:
            self._closure = Closure(
                self.root / "src" if (self.root / PACKAGE_DIR).is_dir() else _installed_src(),
                cache=self.root / ".sabre" / "cache" / "closure.json",
            )
        return self._closure

    def code_start(self, job: Job) -> list[str]:
        """The modules the job's command imports first: the CLI, the subcommand's module, and for a
        model's job its backend (reached only through the registry's ``"module:Class"`` strings)."""
        from ..commandmap import COMMANDS

        sub = job.stage.cmd.split()[1]
        start = ["sabre_prior.cli", f"sabre_prior.{COMMANDS[sub]}"]
        model = dict(job.item).get("model")
        if model is not None and "models.{model}" in " ".join(job.stage.params):
            from ..registry import SPECS

            spec = SPECS.get(str(self.params["models"][model].get("backend")))
            if spec is not None:
                start += [t.split(":")[0] for t in (spec.target, spec.batch) if t]
        return start

    def recipe(self, job: Job, hub: Mapping[str, Any] | None = None) -> str:
        """The job's recipe: everything besides its data that its outputs are made from (its command,
        the settings it reads, the blob ids of the code its command can import, for a hub split the
        digest of the files it reads at the resolved commit). DVC depends on this file instead of
        params and code, and Snakemake on its modification time (rewritten only on a change)."""
        content: dict[str, Any] = {
            "command": job.command,
            "reads": self.reads(job),
            "code": self.closure().code_ids(self.code_start(job)),
        }
        if job.stage.name == "fetch" and self.kind == "hub":
            content["hub"] = dict(hub or {}).get(dict(job.item)["split"])
        return json.dumps(content, sort_keys=True, indent=1) + "\n"

    def all_outputs(self) -> list[str]:
        return [o for job in self.jobs() for o in job.outputs if job.stage.name not in ("demo_data", "fetch")]


def _installed_src() -> Path:
    """The folder holding the imported ``sabre_prior`` package (outside a checkout)."""
    return Path(__file__).resolve().parents[2]


def snakemake_outputs(pipeline: Pipeline, name: str, report: Callable[..., Any] | None = None) -> list[Any]:
    """The rule's outputs, with Snakemake's report() and directory() markers (passed in from the Snakefile)."""
    stage = BY_NAME[name]
    out: list[Any] = []
    for o in stage.outs:
        for path in expand_star(o.path, pipeline.values()):
            if o.report and report is not None:  # captioned by the same text as the HTML report's
                caption = str(caption_path(Path(path).stem))
                out.append(report(path, caption=caption, category=o.report.category, subcategory=o.report.subcategory))
            else:
                out.append(path)
    return out


# ---------------------------------------------------------------------------
# dvc.yaml
# ---------------------------------------------------------------------------
_HEADER = """\
# GENERATED by `sabre generate` from the pipeline's one declaration (src/sabre_prior/repro/pipeline.py)
# and params.yaml's dataset section and audit.repeats. Do not edit: change the declaration and
# regenerate (a test compares this file with a fresh rendering; the Snakefile regenerates it when
# dataset.source changes kind or audit.repeats changes; `dvc repro` refuses a stale one).
#
# One stage per Snakemake rule, the same `sabre` command; foreach/matrix over params.yaml's
# models, splits and prompt templates (adding one needs no regeneration) and the audit's repeats
# 1..audit.repeats-1 (DVC has no range: written here). Each stage depends on its data and
# its recipe (.sabre/recipes/, written by the stage `recipes`: the command, the settings it reads,
# the code it imports; docs/orchestration.md). Logs (results/logs/) are not outputs: they hold timings.
"""


def _dvc_param(key: str) -> str:
    """A params key in DVC's interpolation syntax (``prompt.templates.0`` -> ``prompt.templates[0]``)."""
    return re.sub(r"\.(\d+)(?=\.|$)", r"[\1]", key)


def _dvc_text(text: str, over: tuple[str, ...]) -> str:
    if over == ("split",):
        subst = {"split": "${item}"}
    elif over == ("model",):
        subst = {"model": "${key}"}
    else:  # a matrix: ${item.<dimension>}
        subst = {name: "${item." + name + "}" for name in DIMENSIONS}
    text = _ITEM.sub(lambda m: subst[m.group(1)], text)
    return _PARAM.sub(lambda m: "${" + _dvc_param(m.group(1)) + "}", text)


def _dvc_fetch(pipeline: Pipeline) -> list[str]:
    """The fetch stage's data deps (a hub split's files are named by the digest in its recipe)."""
    if pipeline.kind == "demo":
        return [C.DEMO_DIR]
    if pipeline.kind == "hub":
        return []
    source = pipeline.source.rstrip("/")
    folders = {s: local_split_folders(pipeline.source, s) for s in pipeline.splits}
    first = pipeline.splits[0]
    templated = [f.replace(first, "{split}") for f in folders[first]]
    if all([t.replace("{split}", s) for t in templated] == folders[s] for s in pipeline.splits):
        deps = [f"{source}/README.md", *(f"{source}/{t}" if t != "." else source for t in templated)]
    else:  # folders that do not follow one pattern: the whole mirror
        deps = [source]
    return deps


def dvc_stage(pipeline: Pipeline, stage: Stage) -> dict[str, Any]:
    """A stage's DVC entry: its command, its data deps and its recipe file (no params, no code files:
    the ``recipes`` stage puts those in the recipe), its outputs."""
    cmd_dir = stage.log.rsplit("/", 1)[0]
    body: dict[str, Any] = {
        "cmd": [_dvc_text(f"mkdir -p {cmd_dir}", stage.over), _dvc_text(stage.command(), stage.over)]
    }
    values = pipeline.values()
    # a dependency on every value of a dimension without values (no repeat while the audit is off) is none
    deps = [dvc_path(d) for d in stage.deps if all(values[n] for n in _STAR.findall(d))]
    if stage.name == "fetch":
        deps = [*_dvc_fetch(pipeline), *deps]
    deps.append(stage.stamp)
    body["deps"] = [_dvc_text(d, stage.over) for d in dict.fromkeys(deps)]
    outs: dict[str, list[Any]] = {}
    for o in stage.outs:
        path = _dvc_text(dvc_path(o.path), stage.over)
        key = {"out": "outs", "metric": "metrics", "plot": "plots"}[o.kind]
        entry: Any = {path: dict(o.plot)} if o.plot else path
        if entry not in outs.setdefault(key, []):
            outs[key].append(entry)
    body.update(outs)
    if stage.over == ("split",):
        return {"foreach": "${splits}", "do": body}
    if stage.over == ("model",):
        return {"foreach": "${models}", "do": body}
    if stage.over:
        return {"matrix": {name: _dvc_axis(pipeline, name) for name in stage.over}, **body}
    return body


def _dvc_axis(pipeline: Pipeline, name: str) -> Any:
    """A matrix axis: ``${<params key>}`` (adding a value needs no regeneration), or for a derived
    dimension (:data:`DERIVED`) its values, written by ``sabre generate``."""
    if name in DERIVED:
        return [int(v) for v in pipeline.values()[name]]
    return "${" + DIMENSIONS[name] + "}"


def recipes_stage(pipeline: Pipeline) -> dict[str, Any]:
    """The DVC stage that writes every job's recipe (what Snakemake's planner writes before a run)."""
    body: dict[str, Any] = {
        "cmd": ["mkdir -p " + LOG_DIR, f"sabre --log {LOG_DIR}/recipes.log recipes"],
        "deps": ["params.yaml", PACKAGE_DIR],
        "outs": [STAMP_DIR],
    }
    if pipeline.kind == "hub" and not pinned(get_param(pipeline.params, "dataset.revision")):
        body["always_changed"] = True  # the branch may have moved: resolve it again on every run
    return body


def render_dvc_yaml(pipeline: Pipeline) -> str:
    import yaml

    stages = {"recipes": recipes_stage(pipeline), **{s.name: dvc_stage(pipeline, s) for s in pipeline.stages}}
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml when present (the same text, faster)
    text = yaml.dump({"stages": stages}, Dumper=dumper, sort_keys=False, width=120, default_flow_style=False)
    return _HEADER + "\n" + text


def dvc_yaml_is_fresh(pipeline: Pipeline, path: Path | None = None) -> bool:
    path = path or pipeline.root / DVC_YAML
    return path.is_file() and path.read_text(encoding="utf-8") == render_dvc_yaml(pipeline)


def write_dvc_yaml(pipeline: Pipeline, path: Path | None = None) -> bool:
    """(Re)write dvc.yaml; True when it changed."""
    from ..io_utils import atomic_writer

    path = path or pipeline.root / DVC_YAML
    text = render_dvc_yaml(pipeline)
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    with atomic_writer(path, "w") as fh:
        fh.write(text)
    return True
