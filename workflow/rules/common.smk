# Shared names for the rules. Paths follow sabre_prior.contracts (see README, "Data contracts").

SPLITS = list(config["splits"])
MODELS = list(config["models"])
SOURCE = config["dataset"]["source"]
IS_DEMO = SOURCE == "demo"
DEMO_SETTINGS = config["dataset"].get("demo", {})


wildcard_constraints:
    split="|".join(SPLITS),
    model="|".join(MODELS),


def fetch_inputs(wildcards):
    """The fetch step reads the generated demo copy when dataset.source is demo."""
    return ["data/demo"] if IS_DEMO else []


def all_outputs():
    return [
        *expand("results/metrics/{model}.json", model=MODELS),
        *expand("results/tables/main_results.{ext}", ext=["md", "csv", "tex"]),
        *expand("results/figures/{fig}.{ext}", fig=FIGURES, ext=["png", "pdf"]),
    ]


FIGURES = ["split_accuracy", "probe_accuracy"]
