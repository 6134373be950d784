"""The API's own documentation: the OpenAPI document as the server really answers, and
pages that show it without the internet.

**OpenAPI.** Every route declares its answer's type and the errors it may send
(:mod:`.responses`); :func:`openapi` adds what FastAPI leaves out or gets wrong for
kbdesk: the 422 validation answer FastAPI lists is never sent (kbdesk answers 400 in its
one error shape), so it goes; every route but these pages needs the bearer token
(the ``bearer`` security scheme, which Swagger UI's "Authorize" fills in).

**Pages.** ``/api/docs`` (Swagger UI) and ``/api/redoc`` (ReDoc) load their scripts
from this server, ``/api/docs/assets/…``: the files ship in the PyPI package
``fastapi-offline`` (a dependency of the ``serve`` extra), so the pages work offline and
on a network that blocks CDNs.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

from kbdesk.serve.errors import ApiError

ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "redoc.standalone.js": "text/javascript",
    "favicon.png": "image/png",
}


def assets_dir() -> Path | None:
    """Where the installed ``fastapi-offline`` keeps Swagger UI and ReDoc (None: not installed)."""
    spec = importlib.util.find_spec("fastapi_offline")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "static"
    return folder if folder.is_dir() else None


def add_doc_pages(app: FastAPI, prefix: str) -> None:
    """``{prefix}/docs``, ``{prefix}/redoc`` and their assets, served from the installed package."""
    spec_url, assets = f"{prefix}/openapi.json", f"{prefix}/docs/assets"

    def page(render: Any) -> HTMLResponse:
        if assets_dir() is None:
            return HTMLResponse(
                "<p>The API documentation pages need the package fastapi-offline: pip install 'kbdesk[serve]'. "
                f"The OpenAPI document is at <a href='{spec_url}'>{spec_url}</a>.</p>",
                status_code=503,
            )
        return render()

    def swagger_ui() -> HTMLResponse:
        return page(
            lambda: get_swagger_ui_html(
                openapi_url=spec_url,
                title=f"{app.title} API",
                swagger_js_url=f"{assets}/swagger-ui-bundle.js",
                swagger_css_url=f"{assets}/swagger-ui.css",
                swagger_favicon_url=f"{assets}/favicon.png",
                swagger_ui_parameters={"persistAuthorization": True},
            )
        )

    def redoc() -> HTMLResponse:
        return page(
            lambda: get_redoc_html(
                openapi_url=spec_url,
                title=f"{app.title} API",
                redoc_js_url=f"{assets}/redoc.standalone.js",
                redoc_favicon_url=f"{assets}/favicon.png",
                with_google_fonts=False,
            )
        )

    def docs_asset(name: str) -> FileResponse:
        folder = assets_dir()
        if name not in ASSETS or folder is None:
            raise ApiError(404, f"no such file {name!r}")
        return FileResponse(folder / name, media_type=ASSETS[name], headers={"Cache-Control": "max-age=86400"})

    app.add_api_route(f"{prefix}/docs", swagger_ui, methods=["GET"], include_in_schema=False, name="swagger_ui")
    app.add_api_route(f"{prefix}/redoc", redoc, methods=["GET"], include_in_schema=False, name="redoc")
    app.add_api_route(
        f"{prefix}/docs/assets/{{name}}", docs_asset, methods=["GET"], include_in_schema=False, name="docs_asset"
    )


def openapi(app: FastAPI) -> dict[str, Any]:
    """The OpenAPI document, as the server answers (see the module doc)."""
    if app.openapi_schema:
        return app.openapi_schema
    from fastapi.openapi.utils import get_openapi

    spec = get_openapi(
        title=app.title, version=app.version, description=app.description, routes=app.routes, tags=app.openapi_tags
    )
    for methods in spec.get("paths", {}).values():
        for operation in methods.values():
            operation.get("responses", {}).pop("422", None)  # never sent: invalid input is a 400
    schemas = spec.get("components", {}).get("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    app.openapi_schema = spec
    return spec
