"""The ``sabre`` dispatcher: each subcommand lives with its stage, a run imports only its
stage's command module, and each DVC stage's ``code=`` covers what its command imports."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from sabre_prior import cli
from sabre_prior.repro.closure import Closure
from sabre_prior.repro.pipeline import STAGES

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "sabre_prior"
STAGE_PACKAGES = ("data", "inference", "scoring", "report", "analysis", "repro")


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
    own = module.split(".")[0] if module != "cli" else None
    stages = {m.split(".")[1] for m in loaded if m.count(".") >= 1 and m.split(".")[1] in STAGE_PACKAGES}
    assert stages == ({own} if own else set()), loaded


# ---------------------------------------------------------------------------
# code= of each stage covers the modules its command imports (read from the source)
# ---------------------------------------------------------------------------
def _file(module: str) -> Path | None:
    base = PKG.joinpath(*module.split(".")) if module else PKG
    for cand in (base.with_suffix(".py"), base / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _imports(module: str, tree: ast.AST) -> set[str]:
    """Modules of sabre_prior that ``tree`` (of ``module``) imports, with their parent packages."""
    path = _file(module)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package[: len(package) - node.level + 1] + (node.module.split(".") if node.module else [])
        elif (node.module or "").startswith("sabre_prior"):
            base = node.module.split(".")[1:]
        else:
            continue
        for alias in node.names:
            full = [*base, alias.name]
            target = full if _file(".".join(full)) else base
            found |= {".".join(target[:i]) for i in range(1, len(target) + 1)}
    return {m for m in found if _file(m)}


def _closure(start: set[str], done: set[str]) -> set[str]:
    """``start`` and everything it imports, top level and lazily (``done``: already expanded)."""
    seen, todo = set(done), list(start)
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += _imports(module, ast.parse(_file(module).read_text(encoding="utf-8")))
    return seen


def _handler_imports(command: str) -> set[str]:
    """What running ``command`` imports: the top level of cli and of the command's module, the
    handler's lazy imports, and all that these import (the other handlers' lazy imports do not run)."""
    module = cli.COMMANDS[command]
    parser = cli.build_parser([module])
    func = parser._subparsers._group_actions[0].choices[command].get_default("func")
    tree = ast.parse(_file(module).read_text(encoding="utf-8"))
    top = ast.Module(body=[n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))], type_ignores=[])
    handler = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == func.__name__)
    cli_tree = ast.parse(_file("cli").read_text(encoding="utf-8"))
    cli_top = ast.Module(body=[n for n in cli_tree.body if isinstance(n, (ast.Import, ast.ImportFrom))], type_ignores=[])
    return _closure(_imports(module, top) | _imports(module, handler) | _imports("cli", cli_top), {module, "cli"})


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.name)
def test_a_recipes_code_covers_what_its_command_imports(stage):
    """The recipe's import closure (sabre_prior.repro.closure) holds every module the handler imports
    (found here by a separate reading of the source), so an edit of any of them re-runs the job."""
    from sabre_prior.repro.closure import RUNNER

    command = stage.cmd.split()[1]
    closure = Closure(ROOT / "src")
    ids = closure.code_ids(["sabre_prior.cli", f"sabre_prior.{cli.COMMANDS[command]}"])
    missing = [
        _file(m).relative_to(ROOT).as_posix()
        for m in sorted(_handler_imports(command))
        if f"sabre_prior.{m}" not in RUNNER and _file(m).relative_to(ROOT).as_posix() not in ids
    ]
    assert not missing, f"stage {stage.name}: the recipe's code misses {missing}"


def test_a_module_nothing_imports_is_in_no_recipe_and_an_edit_changes_the_blob_id(tmp_path):
    import shutil

    src = tmp_path / "src"
    shutil.copytree(PKG, src / "sabre_prior", ignore=shutil.ignore_patterns("__pycache__"))
    (src / "sabre_prior" / "nobody_imports_me.py").write_text("X = 1\n", encoding="utf-8")
    start = ["sabre_prior.cli", "sabre_prior.report.commands"]
    before = Closure(src).code_ids(start)
    assert "src/sabre_prior/nobody_imports_me.py" not in before
    assert "src/sabre_prior/report/tables.py" in before and "src/sabre_prior/inference/engine.py" not in before
    target = src / "sabre_prior" / "report" / "tables.py"
    target.write_text(target.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    after = Closure(src).code_ids(start)
    assert {k for k in before if before[k] != after[k]} == {"src/sabre_prior/report/tables.py"}


def test_the_parse_cache_gives_the_same_closures_and_follows_an_edit(tmp_path):
    """Closures computed with the cross-process parse cache (.sabre/cache/closure.json) equal the
    ones parsed afresh, before and after an edit that adds an import; a damaged cache is ignored."""
    import shutil

    src = tmp_path / "src"
    shutil.copytree(PKG, src / "sabre_prior", ignore=shutil.ignore_patterns("__pycache__"))
    cache = tmp_path / "closure.json"
    starts = [["sabre_prior.cli", f"sabre_prior.{m}"] for m in sorted(set(cli.COMMANDS.values()))]

    def closures(use_cache: bool) -> list[dict[str, str]]:
        c = Closure(src, cache=cache if use_cache else None)
        return [c.code_ids(s) for s in starts]

    fresh = closures(False)
    assert closures(True) == fresh and cache.is_file()  # fills the cache
    stamp = cache.stat().st_mtime_ns
    assert closures(True) == fresh and cache.stat().st_mtime_ns == stamp  # all hits: not rewritten
    # an edit: the report commands now import the engine; the cached entry of the old bytes is not used
    target = src / "sabre_prior" / "report" / "tables.py"
    target.write_text(target.read_text(encoding="utf-8") + "\nfrom ..inference import engine  # noqa\n", encoding="utf-8")
    edited = closures(False)
    assert edited != fresh and closures(True) == edited
    report = starts.index(["sabre_prior.cli", "sabre_prior.report.commands"])
    engine = "src/sabre_prior/inference/engine.py"
    assert engine not in fresh[report] and engine in edited[report]
    cache.write_text("{not json", encoding="utf-8")
    assert closures(True) == edited


def test_the_command_map_is_what_the_modules_register(tmp_path: Path) -> None:
    """commandmap.COMMANDS is generated (repro/generated.py) from the modules that assign REGISTRARS:
    the modules found by reading the source are exactly the map's, and the CLI's own come first."""
    from sabre_prior.repro import generated

    assert sorted(generated._modules_with_registrars(PKG)) == sorted(set(cli.COMMANDS.values()))
    assert generated.registered_commands() == cli.COMMANDS and list(cli.COMMANDS)[0] == "check-config"
    # a module is found by its top-level REGISTRARS assignment, not by a mention of the name
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "cmds.py").write_text("REGISTRARS: list = []\n", encoding="utf-8")
    (tmp_path / "pkg" / "other.py").write_text('"""Registered through REGISTRARS elsewhere."""\n', encoding="utf-8")
    assert generated._modules_with_registrars(tmp_path) == ["pkg.cmds"]


def test_captions_come_from_the_declaration_one_per_stem(monkeypatch: pytest.MonkeyPatch) -> None:
    from sabre_prior.report import style
    from sabre_prior.repro import generated
    from sabre_prior.repro.pipeline import Out, Report, Stage

    caps = generated.captions()
    assert set(caps) == {Path(o.path).stem for s in STAGES for o in s.outs if o.report}
    for stem, text in caps.items():
        assert style.caption(stem) == " ".join(text.split())  # the generated file, its comment line skipped
    twice = Stage("x", (), "sabre tables", (), (Out("a/t.md", report=Report("T", "t", "one")), Out("a/t.png", report=Report("F", "t", "two"))))
    monkeypatch.setattr(generated, "STAGES", (twice,))
    with pytest.raises(ValueError, match="two different captions"):
        generated.captions()
