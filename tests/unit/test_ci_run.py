"""`.ci/run` and the README agree on how the tests are run: once, against the secured broker (issue 27: the
production setting, every client under its principal), with the docs site built strictly and the layers
checked; the README stays a README (issue 27: at most 250 lines, the reference in docs/)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CI_RUN = (REPO / ".ci" / "run").read_text(encoding="utf-8")
README = (REPO / "README.md").read_text(encoding="utf-8")


def _array(name: str) -> list[str]:
    """The words of the bash array ``NAME=(...)`` in .ci/run (it may span lines)."""
    m = re.search(rf"^{name}=\((.*?)\)\s*$", CI_RUN, re.MULTILINE | re.DOTALL)
    assert m, f"{name}=(...) not found in .ci/run"
    return shlex.split(m.group(1))


def test_the_readme_shows_the_test_command_that_ci_runs():
    m = re.search(r"The test command that `\.ci/run` runs[^\n]*\n\n```bash\n(.*?)\n```", README, re.DOTALL)
    assert m, "README: the test command block after 'The test command that `.ci/run` runs' is missing"
    assert shlex.split(m.group(1)) == _array("TEST_CMD")


def test_ci_runs_every_test_once_on_the_secured_broker_and_checks_the_junit_file():
    assert "SECURE_TEST_CMD" not in CI_RUN  # the system tests run once, not again on a second broker
    assert CI_RUN.count('run_pytest "${TEST_CMD[@]}"') == 1
    assert "secure_kafka_sh start --secure" in CI_RUN and "KAFKA_SASL_USERNAME=admin" in CI_RUN
    assert 'bash "$KAFKA_SH" start' not in CI_RUN  # no plain broker
    assert 'check_junit "$JUNIT_XML"' in CI_RUN and "CROUPIER_REQUIRE_KAFKA=1" in CI_RUN
    assert "HYPOTHESIS_PROFILE" in CI_RUN
    assert "runs it once, against a secured broker" in README


def test_ci_builds_the_docs_strictly_and_checks_the_layers():
    assert "mkdocs build --strict" in CI_RUN and "lint-imports" in CI_RUN
    assert (REPO / "mkdocs.yml").is_file() and (REPO / ".importlinter").is_file()


def test_the_readme_is_a_readme():
    lines = README.splitlines()
    assert len(lines) <= 250, len(lines)
    for image in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README):
        assert (REPO / image).is_file(), image
    for link in re.findall(r"\]\((docs/[^)#]+)", README):
        assert (REPO / link).exists(), link


def _compose_step(path: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The compose stage of .ci/run, run by bash with ``PATH=path`` from the repository's root."""
    m = re.search(r"^# -+ docker-compose\.yml\n(.*?^stage_done \"compose config\"[^\n]*\n)", CI_RUN,
                  re.MULTILINE | re.DOTALL)
    assert m, "the docker-compose.yml stage is missing from .ci/run"
    script = tmp_path / "step.sh"
    script.write_text('set -euo pipefail\nsay() { printf "%s\\n" "$*"; }\nstage_done() { :; }\n' + m.group(1))
    return subprocess.run([shutil.which("bash") or "/bin/bash", str(script)], check=False, cwd=REPO,
                          env={"PATH": path}, capture_output=True, text=True, timeout=30)


def test_ci_checks_the_compose_file_with_docker_compose_only_where_it_is_installed(tmp_path: Path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # no docker at all (or a docker client without the compose plugin): the stage says so and passes
    r = _compose_step(str(bin_dir), tmp_path)
    assert r.returncode == 0 and "Docker Compose is not installed" in r.stdout, r.stderr
    # Docker Compose present: `docker compose config -q` runs, and a file it refuses fails CI
    docker = bin_dir / "docker"
    docker.write_text('#!/bin/sh\necho "$*" >> "$(dirname "$0")/calls"\n'
                      '[ "$2" = version ] && exit 0\n[ "$*" = "compose config -q" ] && exit 15\nexit 1\n')
    docker.chmod(0o755)
    r = _compose_step(f"{bin_dir}:/usr/bin:/bin", tmp_path)
    assert r.returncode == 15 and "docker compose config -q" in r.stdout
    assert (bin_dir / "calls").read_text().splitlines() == ["compose version", "compose config -q"]
