"""Bearer tokens and API keys: admin commands and authentication."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from sowctl.foundation.errors import Unauthorized
from sowctl.services import credentials
from sowctl.services.access import Caller
from sowctl.storage import models as m


@pytest.fixture
def org(cli) -> str:
    """The organization "acme" (and the default "local" one, made by sows create)."""
    assert cli("sows", "create", "seed").exit_code == 0
    m.Organization.create(id="acme", name="Acme")
    return "acme"


def issue_token(cli, *args: str) -> str:
    result = cli("tokens", "create", *args)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def stored_text(db_url: str) -> bytes:
    """Every byte the database keeps on disk (main file and write-ahead log)."""
    return b"".join(path.read_bytes() for path in Path(db_url).parent.glob(Path(db_url).name + "*"))


def every_value(model) -> list[str]:
    return [str(value) for row in model.select().dicts() for value in row.values()]


# --- tokens ---------------------------------------------------------------------------


def test_tokens_create_prints_only_the_token(cli, org, db_url):
    out = issue_token(cli, "--user", "ada", "--org", org)
    assert out.endswith("\n") and out.count("\n") == 1
    token = out.strip()
    assert token.startswith("sowt_") and len(token) > 40
    row = m.ApiToken.get()
    assert row.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert (row.user_id, row.organization_id, row.role, row.revoked_at) == ("ada", org, "member", None)
    assert all(token not in value for value in every_value(m.ApiToken))
    assert m.User.get_by_id("ada").organization_id == org  # a new user is made in the org
    if "://" not in db_url:
        assert token.encode() not in stored_text(db_url)


@pytest.mark.parametrize("role", ["viewer", "member", "admin"])
def test_tokens_create_with_a_role(cli, org, role):
    token = issue_token(cli, "--user", "ada", "--org", org, "--role", role).strip()
    assert credentials.authenticate_token(token) == Caller(user_id="ada", organization_id=org, role=role)


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("--user", "ada", "--org", "nope"), 3, "error: organization nope not found\n"),
        (
            ("--user", "ada", "--org", "acme", "--role", "owner"),
            2,
            "error: Invalid value for '--role': 'owner' is not one of 'viewer', 'member', 'admin'",
        ),
        (("--user", "bob", "--org", "acme"), 2, "error: user: user bob belongs to organization local"),
        (("--user", " ", "--org", "acme"), 2, "error: user: must not be empty\n"),
        (("--org", "acme"), 2, "error: Missing option '--user'"),
        (("--user", "ada"), 2, "error: Missing option '--org'"),
    ],
)
def test_refused_tokens_create(cli, org, args, code, message):
    m.User.create(id="bob", organization="local", name="Bob")
    result = cli("tokens", "create", *args)
    assert result.exit_code == code
    assert result.stdout == ""
    assert result.stderr.startswith(message) and result.stderr.count("\n") == 1
    assert m.ApiToken.select().count() == 0


def test_tokens_list_masks_the_secrets(cli, org, monkeypatch):
    tokens = [issue_token(cli, "--user", user, "--org", org).strip() for user in ("ada", "eve")]
    listed = cli("tokens", "list", "--json").json()
    assert sorted((t["userId"], t["organizationId"], t["role"], t["revokedAt"]) for t in listed) == [
        ("ada", org, "member", None),
        ("eve", org, "member", None),
    ]
    assert all(t["token"].endswith("…") and len(t["token"]) <= 10 for t in listed)
    ids = cli("tokens", "list", "-q").stdout.splitlines()
    assert ids == [t["id"] for t in listed]
    piped = cli("tokens", "list").stdout.splitlines()
    assert [line.split("\t")[0] for line in piped] == ids
    outputs = [cli("tokens", "list").stdout, cli("tokens", "list", "--json").stdout]
    monkeypatch.setattr("sowctl.output.render.is_tty", lambda: True)
    outputs.append(cli("tokens", "list").stdout)
    for out in outputs:
        for token in tokens:
            assert token not in out
            assert token[:9] in out  # the hint that tells them apart


@pytest.mark.parametrize("by", ["id", "token"])
def test_tokens_revoke_refuses_the_token_at_once(cli, org, by):
    token = issue_token(cli, "--user", "ada", "--org", org).strip()
    token_id = m.ApiToken.get().id
    assert credentials.authenticate_token(token).user_id == "ada"
    result = cli("tokens", "revoke", token_id if by == "id" else token)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"token {token_id} revoked\n"
    assert token not in result.stdout + result.stderr
    with pytest.raises(Unauthorized, match="revoked"):
        credentials.authenticate_token(token)
    assert m.ApiToken.get_by_id(token_id).revoked_at is not None
    assert cli("tokens", "list", "--json").json()[0]["revokedAt"] is not None
    again = cli("tokens", "revoke", token_id, "--json")  # revoking twice is harmless
    assert again.json() == {"id": token_id, "revoked": True}


def test_revoking_one_token_leaves_the_others(cli, org):
    first = issue_token(cli, "--user", "ada", "--org", org).strip()
    second = issue_token(cli, "--user", "ada", "--org", org).strip()
    assert cli("tokens", "revoke", first).exit_code == 0
    assert credentials.authenticate_token(second).user_id == "ada"


@pytest.mark.parametrize("target", ["nope", "sowt_" + "x" * 43])
def test_revoking_an_unknown_token_is_not_found(cli, org, target):
    result = cli("tokens", "revoke", target)
    assert result.exit_code == 3
    assert result.stderr.startswith("error: token ") and result.stderr.count("\n") == 1
    assert target not in result.stderr or len(target) < 40  # a would-be secret is not echoed


@pytest.mark.parametrize("secret", [None, "", "sowt_wrong", "Bearer x", "x" * 500])
def test_authenticate_token_refuses_unknown_secrets(db, secret):
    with pytest.raises(Unauthorized) as info:
        credentials.authenticate_token(secret)
    assert info.value.status == 401 and info.value.exit_code == 4


# --- API keys -----------------------------------------------------------------------------


def test_keys_create_prints_only_the_key(cli, org, db_url):
    out = cli("keys", "create", "--org", org).stdout
    assert out.count("\n") == 1
    key = out.strip()
    assert key.startswith("sowk_")
    row = m.ApiKey.get()
    assert row.key_hash == hashlib.sha256(key.encode()).hexdigest()
    assert row.organization_id == org
    assert all(key not in value for value in every_value(m.ApiKey))
    if "://" not in db_url:
        assert key.encode() not in stored_text(db_url)
    assert credentials.authenticate_key(key).id == row.id


def test_keys_create_for_an_unknown_org_is_not_found(cli, org):
    result = cli("keys", "create", "--org", "nope")
    assert (result.exit_code, result.stdout) == (3, "")
    assert result.stderr == "error: organization nope not found\n"
    assert m.ApiKey.select().count() == 0


def test_keys_list_masks_and_revoke_refuses_at_once(cli, org, monkeypatch):
    key = cli("keys", "create", "--org", org).stdout.strip()
    for args in (("keys", "list"), ("keys", "list", "--json"), ("keys", "list", "-q")):
        assert key not in cli(*args).stdout
    listed = cli("keys", "list", "--json").json()
    assert [(k["organizationId"], k["revokedAt"]) for k in listed] == [(org, None)]
    assert cli("keys", "revoke", key).exit_code == 0
    with pytest.raises(Unauthorized, match="revoked"):
        credentials.authenticate_key(key)
    monkeypatch.setattr("sowctl.output.render.is_tty", lambda: True)
    table = cli("keys", "list").stdout
    assert key not in table and key[:9] in table


def test_keys_revoke_by_id_and_unknown(cli, org):
    cli("keys", "create", "--org", org)
    key_id = m.ApiKey.get().id
    result = cli("keys", "revoke", key_id)
    assert (result.exit_code, result.stdout) == (0, f"API key {key_id} revoked\n")
    assert m.ApiKey.get_by_id(key_id).revoked_at is not None
    assert cli("keys", "revoke", "nope").exit_code == 3


@pytest.mark.parametrize("secret", [None, "", "sowk_wrong"])
def test_authenticate_key_refuses_unknown_secrets(db, secret):
    with pytest.raises(Unauthorized):
        credentials.authenticate_key(secret)


# --- admin commands need local mode ----------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("tokens", "list"),
        ("tokens", "create", "--user", "u", "--org", "o"),
        ("tokens", "revoke", "x"),
        ("keys", "list"),
        ("keys", "create", "--org", "o"),
        ("keys", "revoke", "x"),
    ],
)
def test_admin_commands_refuse_remote_mode(cli, args):
    result = cli("--server", "http://127.0.0.1:9", *args)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert f"'sowctl {args[0]} {args[1]}' needs direct database access (local mode)" in result.stderr


def test_admin_commands_refuse_a_remote_profile(cli, monkeypatch):
    import tomli_w

    from sowctl.backends import profiles

    monkeypatch.delenv("SOWCTL_DB")
    profiles.config_path().parent.mkdir(parents=True, exist_ok=True)
    profiles.config_path().write_text(tomli_w.dumps({"profiles": {"default": {"server": "http://h"}}}))
    result = cli("tokens", "list")
    assert result.exit_code == 2 and "local mode" in result.stderr
