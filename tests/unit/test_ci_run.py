"""`.ci/run` and the README agree on how the tests are run (issue 9: the system tests run twice, plain and
secured)."""

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


def test_ci_runs_the_system_tests_again_secured_and_checks_both_junit_files():
    secured = _array("SECURE_TEST_CMD")
    assert secured[:-2] == _array("TEST_CMD")[:-1] and secured[-2:] == [
        "tests/system", "--junitxml=var/test-results-secured.xml"]
    assert "secure_kafka_sh start --secure" in CI_RUN and "KAFKA_SASL_USERNAME=admin" in CI_RUN
    assert 'check_junit "$JUNIT_XML"' in CI_RUN and 'check_junit "$SECURE_JUNIT_XML"' in CI_RUN
    assert "runs the system tests (`tests/system`) **twice**" in README


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
