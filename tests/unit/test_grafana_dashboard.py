"""The Grafana dashboard (``infra/grafana/croupier.json``) queries exactly the metrics the code exposes, each
under its exposed name, and the operations guide's table of metrics (docs/guide/operations.md) names the same
ones."""

from __future__ import annotations

import json
import re
from pathlib import Path

from services.runtime import metrics as M

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "infra" / "grafana" / "croupier.json"
_NAME = re.compile(r"\bcroupier_[a-z_]+")
_SUFFIX = re.compile(r"_(total|bucket|count|sum)$")


def exposed() -> set[str]:
    """Every Croupier metric family of the registry (counters without ``_total``) and the live gauges."""
    names = {fam.name for fam in M.REGISTRY.collect() if fam.name.startswith("croupier_")}
    return names | set(M.LIVE_GAUGES)


def _family(sample: str) -> str:
    base = _SUFFIX.sub("", sample)
    return base if base in exposed() else sample


def test_the_dashboard_queries_every_exposed_metric_and_nothing_else():
    doc = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in doc["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 20 and all(e.strip() for e in exprs)
    used = {_family(n) for e in exprs for n in _NAME.findall(e)}
    assert used == exposed()
    for e in exprs:  # a counter is queried as ..._total, a histogram as ..._bucket or ..._count
        for n in _NAME.findall(e):
            if n in {"croupier_messages_handled", "croupier_dead_letters"}:
                raise AssertionError(f"{n} without _total in {e}")
    variables = {v["name"]: v for v in doc["templating"]["list"]}
    assert {"datasource", "service", "table"} <= set(variables)


def test_the_operations_guide_names_the_same_metrics():
    section = (REPO / "docs" / "guide" / "operations.md").read_text()
    named = {_family(n) for n in _NAME.findall(section)}
    assert exposed() <= named, sorted(exposed() - named)
    assert named <= exposed() | {"croupier_"}, sorted(named - exposed())
