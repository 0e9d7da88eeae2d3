"""Every benchmark command shown in README.md and docs/ parses: its script exists and accepts the
options as written (a renamed or dropped option fails here). The benchmarks themselves run for
minutes against loopback servers (or need a GPU), so only their argument parsing runs: the
script is executed as ``__main__`` up to its ``parse_args``, which is stopped right after it
returns; an unknown option or a bad value makes argparse exit with status 2 instead."""

from __future__ import annotations

import argparse
import re
import runpy
import shlex
import sys
from pathlib import Path

import pytest

from tests.project import ROOT

SOURCES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]


def documented() -> list[tuple[str, str, list[str]]]:
    """(where, script, arguments) of each `python benchmarks/<script>.py ...` in the sources."""
    found = []
    for rel in SOURCES:
        for n, line in enumerate((ROOT / rel).read_text(encoding="utf-8").splitlines(), 1):
            for m in re.finditer(r"python (benchmarks/[a-z_]+\.py)((?: +[^`|#\s][^`|#\s]*)*)", line):
                found.append((f"{rel}:{n}", m.group(1), shlex.split(m.group(2))))
    return found


COMMANDS = documented()


def test_the_documented_benchmark_commands_are_found() -> None:
    scripts = {s for _, s, _ in COMMANDS}
    assert {"benchmarks/bench_api.py", "benchmarks/bench_pacing.py", "benchmarks/gpu_check.py"} <= scripts, scripts
    assert any(args for _, _, args in COMMANDS)


class _Parsed(Exception):
    pass


@pytest.mark.parametrize(("where", "script", "args"), COMMANDS, ids=[f"{w}:{' '.join(a)}" for w, _, a in COMMANDS])
def test_a_documented_benchmark_command_parses(where: str, script: str, args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    path = ROOT / script
    assert path.is_file(), f"{where}: {script} does not exist"
    original = argparse.ArgumentParser.parse_args

    def parse_then_stop(self: argparse.ArgumentParser, *a: object, **k: object) -> argparse.Namespace:
        raise _Parsed(original(self, *a, **k))

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)
    monkeypatch.setattr(sys, "argv", [str(path), *args])
    monkeypatch.syspath_prepend(str(path.parent))
    try:
        runpy.run_path(str(path), run_name="__main__")
    except _Parsed as parsed:
        namespace = parsed.args[0]
        assert isinstance(namespace, argparse.Namespace)
        return
    except SystemExit as exc:
        pytest.fail(f"{where}: `python {script} {' '.join(args)}` does not parse (exit status {exc.code})")
    pytest.fail(f"{where}: {script} ran without parsing its arguments")


def test_a_wrong_option_would_be_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: an option the script does not have ends in argparse's exit status 2."""
    with pytest.raises(pytest.fail.Exception, match="does not parse"):
        test_a_documented_benchmark_command_parses("here", "benchmarks/bench_api.py", ["--no-such-option"], monkeypatch)


def test_bench_api_passes_the_settings_rule_predict_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`bench_api.py` runs `sabre predict` "as the rule runs it": the --settings it builds declare the
    same keys, for its model, as rule predict's command for model random does (the command a dry run
    of the shipped project prints: Snakemake computes a job's params when it plans the job)."""
    import json

    from tests.project import copy_project, snakemake

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import bench_api

    project = copy_project(tmp_path / "project")
    dry = snakemake(["-n", "--printshellcmds", "results/predictions/random/context.jsonl"], project).stdout
    command = re.search(r"^Shell command: (sabre .* predict --model random .*)$", dry, re.M)
    assert command, dry[-2000:]
    words = shlex.split(command.group(1))
    rule_keys = json.loads(words[words.index("--settings") + 1])["keys"]
    params = {"models": {"bench": {"backend": "openai", "model_id": "m"}}, "prompt": {"templates": ["screening_v1"]}}
    bench_keys = json.loads(bench_api.rule_settings(params))["keys"]
    assert [k.replace("models.random", "models.bench") for k in rule_keys] == bench_keys
