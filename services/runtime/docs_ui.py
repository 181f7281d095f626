"""The HTTP APIs' documentation UI, served from the package: Swagger UI with nothing fetched from another host.

FastAPI's own ``/docs`` loads Swagger UI's script and style sheet from a CDN, so on a casino's air-gapped
network the page stays blank. :func:`mount_docs` serves it instead from ``webassets/swagger/`` in this package
(``swagger-ui-dist`` from the npm registry, vendored: name, version, licence and checksums in its
``VENDORED.md``), for the command API and the projection's query API alike:

* ``GET /docs``: the Swagger UI page over the app's ``/openapi.json``; every URL it names is the app's own
  (relative to the app's ``root_path``, so it works when the app is mounted under a prefix);
* ``GET /docs/assets/<file>``: the vendored files (``swagger-ui-bundle.js``, ``swagger-ui.css``,
  ``favicon-32x32.png``).

The app must be created with ``docs_url=None`` and ``redoc_url=None`` (ReDoc, which FastAPI also loads from a
CDN, is not offered). Swagger UI's online validator (a request to swagger.io) is switched off. The *Authorize*
button works from the app's HTTP bearer security scheme, which the routes that need a token declare.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

#: the vendored ``swagger-ui-dist`` files (package data)
ASSETS_DIR = Path(__file__).resolve().parent / "webassets" / "swagger"
#: the files the page references, all served from :data:`ASSETS_DIR`
JS, CSS, FAVICON = "swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png"


def mount_docs(app: FastAPI, path: str = "/docs") -> None:
    """Serve Swagger UI at ``path`` and its files at ``path + "/assets"`` from the package. Raises
    ``ValueError`` when the app still has FastAPI's CDN-loading docs (``docs_url``/``redoc_url`` not None)
    and ``FileNotFoundError`` when the vendored files are missing (a broken install)."""
    if app.docs_url is not None or app.redoc_url is not None:
        raise ValueError("create the app with docs_url=None and redoc_url=None: FastAPI's own pages load "
                         "Swagger UI and ReDoc from a CDN")
    missing = [f for f in (JS, CSS, FAVICON) if not (ASSETS_DIR / f).is_file()]
    if missing:
        raise FileNotFoundError(f"the vendored Swagger UI files are missing from {ASSETS_DIR}: {', '.join(missing)}")
    assets = f"{path.rstrip('/')}/assets"
    app.mount(assets, StaticFiles(directory=ASSETS_DIR), name="docs-assets")
    openapi_url = app.openapi_url or "/openapi.json"
    title = f"{app.title}: API docs"

    @app.get(path, include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = str(request.scope.get("root_path", "")).rstrip("/")
        return get_swagger_ui_html(openapi_url=root + openapi_url, title=title,
                                   swagger_js_url=f"{root}{assets}/{JS}", swagger_css_url=f"{root}{assets}/{CSS}",
                                   swagger_favicon_url=f"{root}{assets}/{FAVICON}",
                                   swagger_ui_parameters={"validatorUrl": None, "persistAuthorization": False})


__all__ = ["ASSETS_DIR", "mount_docs"]
