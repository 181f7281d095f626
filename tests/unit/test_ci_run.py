"""`.ci/run` and the README agree on how the tests are run (issue 9: the system tests run twice, plain and
secured)."""

from __future__ import annotations

import re
import shlex
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
