"""Which module defines each ``sabre`` subcommand, so that a run imports only the module of the
command it runs (``sabre --help`` imports them all). Imports nothing. A new subcommand: its
registrar in the module's ``REGISTRARS`` and one line here (tests/test_cli.py checks they agree)."""

#: Subcommand -> the module (below ``sabre_prior``) whose ``REGISTRARS`` define it, in help order.
COMMANDS: dict[str, str] = {
    "check-config": "cli",
    "demo-data": "data.commands",
    "fetch": "data.commands",
    "predict": "inference.commands",
    "estimate": "inference.commands",
    "batches": "inference.commands",
    "prompt-run": "prompt_run",
    "evaluate": "scoring.commands",
    "intervals": "analysis.commands",
    "compare": "analysis.commands",
    "diagnose": "analysis.commands",
    "paper-compare": "analysis.commands",
    "report": "analysis.commands",
    "prompt-sensitivity": "analysis.commands",
    "stability": "analysis.commands",
    "parity": "analysis.commands",
    "tables": "report.commands",
    "figures": "report.commands",
    "plot-data": "report.commands",
    "manifest": "manifest",
    "audit-run": "audit_run",
    "audit": "audit",
    "recover": "sync",
    "batch-audit": "batch_audit",
    "batch-invariance": "batch_audit",
}
