"""The API docs UI served from the package (``services/runtime/docs_ui.py``), for the command API and the
projection's query API: ``/docs`` names no other host (nothing from a CDN: an air-gapped casino network sees the
page), every script, style sheet and icon it names answers 200 from the app itself, with the vendored files'
bytes; it works under a mount prefix; ReDoc is off; the OpenAPI document declares the bearer scheme on the
routes that need a token, so the page's *Authorize* button works."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from services.command_api.gateway import CommandGateway, MemoryCommandBus
from services.command_api.http import create_command_api
from services.floor.dealer import Clock
from services.projection.api import create_api
from services.projection.core import ProjectionCore
from services.runtime.docs_ui import ASSETS_DIR, mount_docs
from services.runtime.memory import MemoryBus

TOKENS = {"dealer": "dealer-token-0123456789", "surveillance": "surveillance-token-01234"}
#: every URL-bearing attribute or string of the page: src="…", href="…", url: '…'
_URLS = re.compile(r"""(?:src|href)\s*=\s*["']([^"']*)["']|url\s*:\s*["']([^"']*)["']""")


def command_app() -> FastAPI:
    return create_command_api(CommandGateway(MemoryCommandBus(MemoryBus()), Clock()), TOKENS)


def query_app() -> FastAPI:
    return create_api(MemoryBus().add(ProjectionCore()), TOKENS)


def _urls(html: str) -> list[str]:
    return [a or b for a, b in _URLS.findall(html)]


@pytest.mark.parametrize("make", [command_app, query_app], ids=["command_api", "query_api"])
def test_docs_page_names_no_other_host_and_its_files_come_from_the_app(make):
    client = TestClient(make())
    page = client.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    assert not re.search(r"https?://|//[a-z0-9]", html, re.IGNORECASE), "the docs page names another host"
    urls = _urls(html)
    assert sorted(urls) == ["/docs/assets/favicon-32x32.png", "/docs/assets/swagger-ui-bundle.js",
                            "/docs/assets/swagger-ui.css", "/openapi.json"]
    assert '"validatorUrl": null' in html  # Swagger UI's online validator (swagger.io) is off
    for url in urls:
        r = client.get(url)
        assert r.status_code == 200, url
        if url.startswith("/docs/assets/"):
            assert hashlib.sha256(r.content).digest() == hashlib.sha256(
                (ASSETS_DIR / url.rsplit("/", 1)[1]).read_bytes()).digest()
    assert client.get("/docs/assets/swagger-ui-bundle.js").headers["content-type"].startswith(
        ("application/javascript", "text/javascript"))
    assert client.get("/docs/assets/swagger-ui.css").headers["content-type"].startswith("text/css")
    assert client.get("/docs/assets/../credentials.py").status_code == 404  # the package's code is not served
    assert client.get("/redoc").status_code == 404  # ReDoc would load from a CDN: not offered


def test_the_docs_work_under_a_mount_prefix():
    outer = FastAPI()
    outer.mount("/command", command_app())
    client = TestClient(outer)
    urls = _urls(client.get("/command/docs").text)
    assert sorted(urls) == ["/command/docs/assets/favicon-32x32.png", "/command/docs/assets/swagger-ui-bundle.js",
                            "/command/docs/assets/swagger-ui.css", "/command/openapi.json"]
    assert all(client.get(u).status_code == 200 for u in urls)


def test_the_vendored_files_are_recorded_with_their_package_version_licence_and_checksums():
    note = (ASSETS_DIR / "VENDORED.md").read_text()
    assert re.search(r"swagger-ui-dist@\d+\.\d+\.\d+", note) and "Apache-2.0" in note
    assert "Apache License" in (ASSETS_DIR / "LICENSE").read_text()
    for name in ("swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png"):
        digest = hashlib.sha256((ASSETS_DIR / name).read_bytes()).hexdigest()
        assert f"{digest}  {name}" in note, name
    # packaged with the distribution (pyproject's package data)
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert '"services.runtime" = ["webassets/swagger/*"]' in pyproject


def test_an_app_with_fastapis_cdn_docs_is_refused():
    with pytest.raises(ValueError, match="docs_url=None"):
        mount_docs(FastAPI())


async def test_the_authorize_button_has_a_bearer_scheme_on_every_route_that_needs_a_token():
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=command_app()), base_url="http://api") as c:
        doc = (await c.get("/openapi.json")).json()
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    for path, item in doc["paths"].items():
        for method, op in item.items():
            open_route = path == "/health/live"
            assert ("security" in op) != open_route, (method, path)
            if not open_route:
                assert op["security"] == [{"bearer": []}], (method, path)
    # the query API: every route that refuses a request without a token (401) declares the scheme (as does a route
    # where a token is optional and shows more: /floor)
    client = TestClient(query_app())
    qdoc = client.get("/openapi.json").json()
    assert qdoc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    secured = set()
    for path, item in qdoc["paths"].items():
        url = re.sub(r"\{[a-z_]+\}", "T1", path)
        status = client.get(url).status_code
        if "security" in item["get"]:
            assert item["get"]["security"] == [{"bearer": []}], path
            secured.add(path)
        else:
            assert status != 401, path
    assert {"/digest", "/tables/{table_id}/odds/surveillance", "/tables/{table_id}/ledger", "/alerts",
            "/players/{player_id}/surveillance"} <= secured
    assert "/tables" not in secured and "/tables/{table_id}/odds" not in secured
