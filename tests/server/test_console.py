"""The web console and /docs as HTTP resources: pages, files, headers, and what they never do.

What a browser does with them is tests/server/test_console_browser.py.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from sowctl.server import console
from sowctl.services.graph_algorithms import SOURCE_FIRST, TARGET_FIRST
from tests.support.doubles import ADMIN, bearer, in_process, load

STATIC = Path(console.__file__).parent / "static"
JS_FILES = sorted(STATIC.glob("*.js"))


@pytest.fixture
def client(migrated_db_url: str) -> httpx.Client:
    return in_process(migrated_db_url)


def assert_strict_headers(response: httpx.Response) -> None:
    policy = response.headers["content-security-policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == "'self'"  # no inline script, no eval, no CDN
    assert directives["style-src"] == "'self'"
    assert directives["connect-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert "unsafe" not in policy
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"
    assert "set-cookie" not in response.headers


# --- pages -----------------------------------------------------------------------------------------


def test_the_console_page_carries_the_ordering_rule_and_the_admin_switch(db_url: str) -> None:
    for admin, word in ((True, "on"), (False, "off")):
        response = in_process(db_url, admin=admin).get("/")
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/html; charset=utf-8"
        assert_strict_headers(response)
        body = response.text
        assert f'data-target-first="{" ".join(sorted(TARGET_FIRST))}"' in body
        assert f'data-source-first="{" ".join(sorted(SOURCE_FIRST))}"' in body
        assert f'data-admin="{word}"' in body
        assert "{{" not in body
        assert "<script>" not in body and "style=" not in body  # nothing inline: the CSP forbids it


def test_docs_page_is_swagger_ui_from_the_installed_package(client: httpx.Client) -> None:
    page = client.get("/docs")
    assert page.status_code == 200
    assert_strict_headers(page)
    assert '<script src="/docs/assets/swagger-ui-bundle.js"' in page.text
    bundle = client.get("/docs/assets/swagger-ui-bundle.js")
    assert bundle.status_code == 200
    assert bundle.headers["content-type"].startswith("text/javascript")
    assert "SwaggerUIBundle" in bundle.text[:5000] or "SwaggerUIBundle" in bundle.text
    assert client.get("/docs/assets/swagger-ui.css").headers["content-type"].startswith("text/css")
    assert "swagger-ui" not in {p.parent.name for p in STATIC.rglob("*")}  # nothing copied into the repo


def test_docs_without_the_package_says_what_to_install(client: httpx.Client, monkeypatch) -> None:
    monkeypatch.setattr(console, "_swagger_dir", lambda: None)
    response = client.get("/docs")
    assert response.status_code == 503
    assert response.json() == {
        "error": "the API documentation needs the swagger-ui-py package: pip install swagger-ui-py"
    }


def test_every_file_the_pages_name_is_served_with_its_type_and_policy(client: httpx.Client) -> None:
    names = set()
    for page in ("/", "/docs"):
        names |= set(re.findall(r'(?:src|href)="(/(?:console|docs/assets)/[^"]+)"', client.get(page).text))
    for script in JS_FILES:  # modules import each other by relative name
        names |= {f"/console/{name}" for name in re.findall(r'from "\./([\w.-]+)"', script.read_text())}
    assert "/console/console.js" in names and "/console/graph.js" in names and "/console/emulator.js" in names
    types = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
    for name in sorted(names):
        response = client.get(name)
        assert response.status_code == 200, name
        assert response.headers["content-type"].startswith(types[Path(name).suffix]), name
        assert_strict_headers(response)
        assert client.head(name).status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        "/console/nope.js",
        "/console/index.html",  # the page is served at /, with its values filled in
        "/console/../__init__.py",
        "/console/%2e%2e/__init__.py",
        "/console/static/../../app.py",
        "/docs/assets/swagger-editor-bundle.js",  # shipped by the package, not used by /docs
        "/docs/assets/../core.py",
        "/docs/",
    ],
)
def test_nothing_else_is_served(client: httpx.Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404, path
    assert response.json()["error"].startswith("no route for GET")


def test_pages_answer_get_and_head_only(client: httpx.Client) -> None:
    response = client.post("/", json={})
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, HEAD"


# --- the scripts keep to the rules the browser tests check in practice ------------------------------


@pytest.mark.parametrize("script", JS_FILES, ids=lambda path: path.name)
def test_scripts_never_parse_text_as_markup(script: Path) -> None:
    """Titles are user input: text goes through text nodes (dom.js), never through an HTML parser."""
    source = script.read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in source, f"{script.name} uses {sink}"
    assert "document.cookie" not in source and "localStorage" not in source  # session storage only


# --- the console costs the API nothing ------------------------------------------------------------


def test_console_files_are_never_faulted_delayed_or_logged(client: httpx.Client) -> None:
    credentials = load(client)
    fault = {"rate": 1.0, "status": 503, "latencyMs": 1}
    assert client.put("/_admin/faults", json=fault, headers=ADMIN).status_code == 200
    assert client.delete("/_admin/requests", headers=ADMIN).status_code == 200
    for path in ("/", "/docs", "/console/console.js", "/docs/assets/swagger-ui.css"):
        assert client.get(path).status_code == 200, path
    failed = client.get("/api/sows", headers=bearer(credentials["token"]))
    assert failed.status_code == 503
    log = client.get("/_admin/requests", headers=ADMIN).json()
    assert [(entry["method"], entry["path"], entry["status"]) for entry in log] == [("GET", "/api/sows", 503)]


def test_the_cli_never_imports_the_console() -> None:
    code = (
        "import sys, runpy\n"
        "sys.argv = ['sowctl', '--help']\n"
        "try:\n    runpy.run_module('sowctl', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('console' if 'sowctl.server.console' in sys.modules else 'clean', file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stderr.strip().splitlines()[-1] == "clean", result.stderr


# --- serve --demo prints a ready link ---------------------------------------------------------------


def test_serve_demo_prints_a_console_link_with_the_token_in_the_fragment(cli, fake_runner: dict) -> None:
    result = cli("serve", "--demo", "--port", "8123")
    assert result.exit_code == 0, result.stderr
    token = re.search(r"^  token:\s+(\S+)$", result.stdout, re.M).group(1)
    assert f"  console:  http://127.0.0.1:8123/#token={token}\n" in result.stdout

    with_admin = cli("serve", "--demo", "--admin", "--port", "8123")
    admin = re.search(r"^Admin token: (\S+)$", with_admin.stdout, re.M).group(1)
    token = re.search(r"^  token:\s+(\S+)$", with_admin.stdout, re.M).group(1)
    assert f"  console:  http://127.0.0.1:8123/#token={token}&admin={admin}\n" in with_admin.stdout

    given = cli("serve", "--demo", "--admin-token", "my-own-admin-token", "--port", "8123")
    assert "my-own-admin-token" not in given.stdout  # a token the user chose is never printed
