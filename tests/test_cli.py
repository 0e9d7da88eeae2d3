"""The ``sabre`` dispatcher: each subcommand lives with its stage, a run imports only its
stage's command module, and each rule depends on its command's code."""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from sabre_prior import cli

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "sabre_prior"
STAGE_PACKAGES = ("data", "inference", "scoring", "report", "analysis")
#: The modules at the package's top that hold a stage's command (workflow/rules/common.smk's COMMAND_MODULES).
COMMAND_MODULES = ("prompt_run", "audit_run", "audit", "manifest", "batch_audit")


def _subcommands(parser) -> set[str]:
    return set(parser._subparsers._group_actions[0].choices)  # argparse keeps them there


def test_every_command_is_registered_by_its_module_only():
    assert _subcommands(cli.build_parser()) == set(cli.COMMANDS)
    for module in dict.fromkeys(cli.COMMANDS.values()):
        assert _subcommands(cli.build_parser([module])) == {c for c, m in cli.COMMANDS.items() if m == module}


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert all(command in out for command in cli.COMMANDS)


@pytest.mark.parametrize("command", ["check-config", "fetch", "predict", "evaluate", "tables", "intervals", "manifest"])
def test_a_command_imports_its_stage_only(command):
    code = (
        "import json, sys\n"
        "from sabre_prior import cli\n"
        f"cli.build_parser(cli.command_modules([{command!r}, '--help']))\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('sabre_prior'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = json.loads(out)
    module = cli.COMMANDS[command]
    own = module.split(".")[0] if "." in module else None  # a stage package, or none (cli, manifest)
    stages = {m.split(".")[1] for m in loaded if m.count(".") >= 1 and m.split(".")[1] in STAGE_PACKAGES}
    assert stages == ({own} if own else set()), loaded


# ---------------------------------------------------------------------------
# the command map; each rule's code input holds its command's module
# ---------------------------------------------------------------------------
def _modules_with_registrars(root: Path) -> list[str]:
    """Modules (dotted, below sabre_prior) whose top level assigns REGISTRARS, read from the source."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            if any(isinstance(t, ast.Name) and t.id == "REGISTRARS" for t in targets):
                found.append(".".join(path.relative_to(root).with_suffix("").parts))
    return found


def test_the_command_map_names_exactly_the_modules_that_register_commands() -> None:
    assert sorted(_modules_with_registrars(PKG)) == sorted(set(cli.COMMANDS.values()))
    assert list(cli.COMMANDS)[0] == "check-config"


def _unit(module: str) -> str:
    """The unit of code a rule lists: a stage's package folder, or a module at the package's top."""
    return module.split(".")[0] if "." in module else f"{module}.py"


@functools.lru_cache(maxsize=None)
def _units_imported(unit: str) -> frozenset[str]:
    """The units whose code ``unit`` imports (any import in any of its files), followed transitively
    (cached: the rules of one command ask again, and parsing every file per rule took ~35 s of CPU)."""
    seen: set[str] = set()
    todo = [unit]
    while todo:
        u = todo.pop()
        if u in seen:
            continue
        seen.add(u)
        files = [PKG / u] if u.endswith(".py") else sorted((PKG / u).rglob("*.py"))
        for f in files:
            todo.extend(_units_a_file_imports(f))
    return frozenset(seen)


@functools.lru_cache(maxsize=None)
def _units_a_file_imports(f: Path) -> tuple[str, ...]:
    """The units one file's relative imports name."""
    found = []
    for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level and node.module:
            parts = f.relative_to(PKG).parts[: len(f.relative_to(PKG).parts) - node.level]
            name = (*parts, *node.module.split("."))[0]
            if (PKG / name).is_dir():
                found.append(name)
            elif (PKG / f"{name}.py").is_file() and name in COMMAND_MODULES:
                found.append(f"{name}.py")
    return tuple(found)


@pytest.mark.slow  # needs the session's finished demo run
def test_each_rule_depends_on_the_code_of_its_command(workflow_summary: list[dict[str, str]]) -> None:
    """A rule's inputs hold the source its command runs: the module defining the command, every file of
    the package folders that code imports from (transitively), and the shared top-level modules; so
    editing any of them re-runs the rule's jobs."""
    top = {p.relative_to(ROOT).as_posix() for p in PKG.glob("*.py")} - {f"src/sabre_prior/{m}.py" for m in COMMAND_MODULES}
    seen = set()
    for row in workflow_summary:
        if row["rule"] in ("demo_data", "dvc_lock"):  # temporary, so unrecorded; Python code, no command
            continue
        words = row["shellcmd"].split()
        command = words[words.index("sabre") + 3]  # sabre --log FILE COMMAND ...
        units = _units_imported(_unit(cli.COMMANDS[command]))
        needed = set(top)
        for u in units:
            needed |= {p.relative_to(ROOT).as_posix() for p in ([PKG / u] if u.endswith(".py") else (PKG / u).rglob("*.py"))}
        missing = sorted(needed - set(row["inputs"]))
        assert not missing, (row["rule"], missing)
        seen.add(row["rule"])
    assert {"fetch", "predict", "evaluate", "tables", "html_report", "prompt_run", "audit"} <= seen
