"""The editable install a newcomer runs first: quiet, and the package imports from anywhere."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_editable_install_prints_no_warning_and_imports(tmp_path: Path) -> None:
    # A copy of what the install reads, so the test writes nothing into the repository.
    project = tmp_path / "project"
    project.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copyfile(REPO / name, project / name)
    shutil.copytree(
        REPO / "cosmic_curriculum",
        project / "cosmic_curriculum",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    # As scripts/install.sh does: today's pip shows what the build backend warns.
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    install = subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "-e",
            str(project),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    said = (install.stdout + install.stderr).lower()
    # A pip index this machine configures but lacks is the machine's notice, not ours.
    ours = [
        line
        for line in said.splitlines()
        if "warning" in line and not line.startswith("warning: location")
    ]
    assert ours == [], "\n".join(ours)
    where = subprocess.run(
        [str(python), "-c", "import cosmic_curriculum; print(cosmic_curriculum.__file__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    assert Path(where.stdout.strip()).resolve() == (project / "cosmic_curriculum" / "__init__.py")
