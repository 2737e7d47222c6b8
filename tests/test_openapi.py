"""The API's OpenAPI document (webui/openapi.py) says every endpoint the app has, and no other."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from webui import create_app
from webui.openapi import DOCUMENT, document

IGNORED_METHODS = {"HEAD", "OPTIONS"}


@pytest.fixture
def app(live_table, tmp_path: Path):
    return create_app(live_table.runtime, data_dir=tmp_path)


def openapi_path(rule: str) -> str:
    """A Flask rule as OpenAPI writes a path: ``<int:number>`` is ``{number}``."""
    return re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule)


def api_routes(app) -> dict[str, set[str]]:
    routes: dict[str, set[str]] = {}
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith("/api/"):
            methods = set(rule.methods or ()) - IGNORED_METHODS
            routes.setdefault(openapi_path(rule.rule), set()).update(methods)
    return routes


def test_every_api_route_is_documented_with_its_methods(app):
    documented = {path: {m.upper() for m in item} for path, item in DOCUMENT["paths"].items()}
    routes = api_routes(app)
    assert routes, "no /api routes found"
    for path, methods in routes.items():
        assert path in documented, f"{path} is not in webui/openapi.py"
        assert methods == documented[path], f"{path}: app {methods}, document {documented[path]}"
    stale = set(documented) - set(routes)
    assert not stale, f"documented but not served: {stale}"


def refs(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [value["$ref"]] if "$ref" in value else [r for v in value.values() for r in refs(v)]
    if isinstance(value, list):
        return [r for v in value for r in refs(v)]
    return []


def test_the_document_is_well_formed():
    assert DOCUMENT["openapi"] == "3.1.0"
    assert DOCUMENT["info"]["title"] and DOCUMENT["info"]["version"]
    for path, item in DOCUMENT["paths"].items():
        assert path.startswith("/api/")
        params = set(re.findall(r"{(\w+)}", path))
        for method, op in item.items():
            assert method in {"get", "post", "put", "delete", "patch"}
            assert op["summary"] and op["responses"], f"{method} {path}"
            declared = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
            assert declared == params, f"{method} {path}: path parameters"
            if method != "get":
                assert op.get("security") == [{"csrf": []}], f"{method} {path}: CSRF"
                assert "403" in op["responses"]
            for status, response in op["responses"].items():
                assert re.fullmatch(r"[1-5]\d\d", status) and response["description"] is not None
    for ref in refs(DOCUMENT):
        name = ref.removeprefix("#/components/schemas/")
        assert name in DOCUMENT["components"]["schemas"], ref


def test_it_is_served_and_a_copy_each_time(app):
    response = app.test_client().get("/api/openapi.json")
    assert response.status_code == 200 and response.get_json() == DOCUMENT
    mine = document()
    mine["paths"].clear()
    assert DOCUMENT["paths"]
