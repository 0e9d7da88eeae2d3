"""Which module defines each ``sabre`` subcommand (read by the CLI and by the pipeline's recipes,
whose code closure starts at the subcommand's module). Imports nothing."""

#: Subcommand -> the module (below ``sabre_prior``) whose ``REGISTRARS`` define it, in help order.
COMMANDS: dict[str, str] = {
    "check-config": "cli",
    "demo-data": "data.commands",
    "fetch": "data.commands",
    "predict": "inference.commands",
    "estimate": "inference.commands",
    "batches": "inference.commands",
    "evaluate": "scoring.commands",
    "tables": "report.commands",
    "figures": "report.commands",
    "plot-data": "report.commands",
    "intervals": "analysis.commands",
    "compare": "analysis.commands",
    "diagnose": "analysis.commands",
    "paper-compare": "analysis.commands",
    "report": "analysis.commands",
    "manifest": "repro.commands",
    "generate": "repro.commands",
    "recipes": "repro.commands",
    "recover": "repro.commands",
    "status": "repro.commands",
}
