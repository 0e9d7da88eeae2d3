"""What the docs, configs and install script say is true (issue 19, "Documented steps that are not true")."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from project import BIN, ROOT, project_files

DOCS = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]


def text(rel: str) -> str:
    return (ROOT / rel).read_text(encoding="utf-8")


def test_no_file_of_the_repository_cites_spec_md() -> None:
    """SPEC.md is not in the repository: whatever a user needs is written here (docs/benchmark.md)."""
    citing = [rel for rel in project_files() if rel.endswith((".py", ".md", ".yaml", ".yml", ".sh", ".smk", ".toml"))
              and rel != "tests/test_docs_facts.py" and "SPEC" + ".md" in text(rel)]  # fmt: skip
    assert citing == []
    assert "paper_main_results.csv" in text("docs/benchmark.md") and "docs/benchmark.md" in text("configs/paper.yaml")


def test_the_install_script_names_the_torch_the_locks_pin() -> None:
    script = text("scripts/install.sh")
    pinned = re.search(r"^torch==(\S+)$", text("requirements-test.lock"), re.M)
    assert pinned and "requirements-test.lock" in script
    assert set(re.findall(r"torch (\d+\.\d+\.\d+)", script)) <= {pinned.group(1)}, "install.sh names another torch"


def test_the_docs_name_every_system_package_install_test_adds() -> None:
    script = text("scripts/install.sh")
    packages = re.findall(r"need\+=\(([\w-]+)\)", script)
    assert {"chromium", "munge", "slurmctld", "slurmd", "slurm-client"} <= set(packages)
    install = text("docs/install.md")
    assert [p for p in packages if f"`{p}`" not in install] == []
    readme = text("README.md")
    assert "munge" in readme and "slurm-wlm" in readme


def test_snakemakes_report_file_is_git_ignored() -> None:
    proc = subprocess.run(["git", "check-ignore", "-q", "report.html"], cwd=ROOT)
    assert proc.returncode == 0, "report.html (snakemake --report report.html) is not git-ignored"


def test_the_hub_login_shown_is_the_installed_one() -> None:
    shown = [rel for rel in [*DOCS, "configs/paper.yaml", "configs/open_models.yaml"] if "huggingface-cli login" in text(rel)]
    assert shown == []
    assert "`hf auth login`" in text("README.md")
    proc = subprocess.run([str(BIN / "hf"), "auth", "login", "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "Usage: hf auth login" in proc.stdout


def test_the_slurm_message_documented_is_snakemakes(tmp_path: Path) -> None:
    """Snakemake's own message for an executor without its plugin, as the profile and docs quote it."""
    proc = subprocess.run([str(BIN / "snakemake"), "--executor", "nosuch", "-n"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode != 0 and "argument --executor/-e: invalid choice: 'nosuch'" in proc.stderr
    quoted = "argument --executor/-e: invalid choice: 'slurm'"
    assert quoted in text("docs/troubleshooting.md") and quoted in text("profiles/slurm/config.yaml")
    assert "pip install -e '.[cluster]'" in text("profiles/slurm/config.yaml")


def test_dvc_plots_needs_the_network_as_the_docs_say() -> None:
    import dvc_render.vega

    source = Path(dvc_render.vega.__file__).read_text(encoding="utf-8")
    assert re.search(r'<script src="https://cdn\.jsdelivr\.net/npm/vega@', source)  # the page DVC writes
    for rel in ("README.md", "docs/troubleshooting.md"):
        assert "results/report/index.html" in text(rel) and "blank" in text(rel), rel



def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_relative_link_of_the_docs_points_to_a_file_and_heading_that_exist() -> None:
    """results/README.md once sent readers to a README section that did not exist (issue 33)."""
    pages = [ROOT / "README.md", ROOT / "results" / "README.md", ROOT / "data" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue  # a web address or mailto:
            file, _, anchor = target.partition("#")
            dest = (page.parent / file).resolve() if file else page
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}: no such file")
            elif anchor and dest.suffix == ".md":
                text = dest.read_text(encoding="utf-8")
                slugs = {_slug(h) for h in re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", text, flags=re.S), flags=re.M)}
                if anchor not in slugs:
                    broken.append(f"{page.relative_to(ROOT)}: {target}: no heading with that anchor")
    assert not broken, "\n".join(broken)
