"""Profiles: `sowctl config`, the config file's safety, and option > env > profile > default."""

from __future__ import annotations

import json
import os
import stat
import tomllib
from pathlib import Path

import pytest

from sowctl.backends import profiles
from sowctl.backends.settings import DEFAULT_TIMEOUT, Settings
from tests.support.sockets import closed_url


@pytest.fixture
def conf(cli, monkeypatch):
    """The CLI with no SOWCTL_DB in the environment, so profiles decide the mode."""
    monkeypatch.delenv("SOWCTL_DB", raising=False)
    return cli


@pytest.fixture
def path() -> Path:
    return profiles.config_path()


def mode_of(result) -> dict:
    """`status --json` shows what is in effect (its exit code says whether it answers)."""
    assert result.exit_code in (0, 2, 5), result.stderr  # 2: no database file yet
    return result.json()


# --- config set / get / list / use / path ---------------------------------------------------------


def test_set_get_roundtrip(conf, path):
    assert conf("config", "set", "server", "http://prod.example:8000").exit_code == 0
    assert conf("config", "set", "org", "org-acme").exit_code == 0
    assert conf("config", "set", "timeout", "2.5").exit_code == 0
    assert conf("config", "get", "server").stdout == "http://prod.example:8000\n"
    assert conf("config", "get", "timeout").stdout == "2.5\n"
    data = tomllib.loads(path.read_text())
    assert data == {
        "profiles": {"default": {"server": "http://prod.example:8000", "org": "org-acme", "timeout": 2.5}}
    }
    assert [p.name for p in path.parent.iterdir()] == ["config.toml"]  # no temp files left behind


def test_set_into_named_profile(conf, path):
    assert conf("config", "set", "api-key", "sowk_0123456789abcdef", "--profile", "ci").exit_code == 0
    assert conf("--profile", "ci", "config", "set", "company", "comp-1").exit_code == 0
    assert tomllib.loads(path.read_text()) == {
        "profiles": {"ci": {"api_key": "sowk_0123456789abcdef", "company": "comp-1"}}
    }


def test_secrets_masked_unless_asked(conf):
    conf("config", "set", "token", "sowt_supersecretvalue0123")
    assert conf("config", "get", "token").stdout == "sowt_supe…\n"
    assert conf("config", "get", "token", "--show-secrets").stdout == "sowt_supersecretvalue0123\n"
    listed = conf("config", "list", "--json")
    assert "supersecret" not in listed.stdout
    assert listed.json()["profiles"]["default"]["token"] == "sowt_supe…"
    assert "supersecret" not in conf("config", "list").stdout
    assert "sowt_supersecretvalue0123" in conf("config", "list", "--show-secrets", "--json").stdout


def test_list_marks_current(conf, path):
    conf("config", "set", "server", "http://a.example", "--profile", "a")
    conf("config", "set", "db", "/tmp/b.db", "--profile", "b")
    assert conf("config", "use", "b").exit_code == 0
    listed = conf("config", "list", "--json").json()
    assert listed == {
        "current": "b",
        "path": str(path),
        "profiles": {"a": {"server": "http://a.example"}, "b": {"db": "/tmp/b.db"}},
    }
    lines = conf("config", "list").stdout.splitlines()  # piped: TSV, current marked with *
    assert lines == ["\ta\tserver\thttp://a.example", "*\tb\tdb\t/tmp/b.db"]
    assert conf("--profile", "a", "config", "list", "--json").json()["current"] == "a"


def test_use_unknown_profile_is_not_found(conf):
    result = conf("config", "use", "nope")
    assert result.exit_code == 3
    assert "no profile 'nope'" in result.stderr


def test_path(conf, path):
    assert conf("config", "path").stdout == f"{path}\n"


def test_path_defaults_to_app_dir(conf, monkeypatch, tmp_path):
    monkeypatch.delenv("SOWCTL_CONFIG")
    printed = Path(conf("config", "path").stdout.strip())
    assert printed.name == "config.toml"
    assert printed.parent == profiles.app_dir()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("set", "colour", "red"), "unknown key 'colour'; keys are: server, token, api_key, org, company"),
        (("get", "colour"), "unknown key 'colour'"),
        (("unset", "colour"), "unknown key 'colour'"),
        (("set", "timeout", "soon"), "timeout must be a positive number of seconds"),
        (("set", "timeout", "0"), "timeout must be a positive number of seconds"),
        (("set", "server", "prod.example"), "server must be an http:// or https:// URL"),
        (("set", "org", ""), "org must not be empty"),
    ],
)
def test_bad_keys_and_values_exit_2(conf, path, args, message):
    result = conf("config", *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert not path.exists()


def test_get_unset_key_exit_3(conf):
    result = conf("config", "get", "token")
    assert result.exit_code == 3
    assert result.stderr == "error: token is not set in profile default\n"


def test_unset(conf, path):
    conf("config", "set", "org", "org-1")
    conf("config", "set", "company", "c-1")
    assert conf("config", "unset", "org").exit_code == 0
    assert tomllib.loads(path.read_text()) == {"profiles": {"default": {"company": "c-1"}}}
    assert conf("config", "unset", "org").exit_code == 3


def test_server_and_db_replace_each_other(conf, path):
    conf("config", "set", "db", "/tmp/x.db")
    result = conf("config", "set", "server", "http://x.example")
    assert "removed db from profile default" in result.stderr
    assert tomllib.loads(path.read_text()) == {"profiles": {"default": {"server": "http://x.example"}}}


def test_invalid_toml_is_a_clear_error(conf, path):
    path.parent.mkdir(parents=True)
    path.write_text("profiles = [[[")
    result = conf("config", "list")
    assert result.exit_code == 2
    assert f"config file {path} is not valid TOML" in result.stderr


# --- the file's permissions -------------------------------------------------------------------------


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_new_config_file_is_private(conf, path):
    conf("config", "set", "token", "sowt_abcdefghijklmnop")
    assert mode(path) == 0o600


def test_existing_world_readable_file_is_tightened(conf, path):
    path.parent.mkdir(parents=True)
    path.write_text('[profiles.default]\norg = "org-1"\n')
    os.chmod(path, 0o644)
    assert mode(path) == 0o644
    conf("config", "set", "token", "sowt_abcdefghijklmnop")
    assert mode(path) == 0o600
    assert tomllib.loads(path.read_text()) == {
        "profiles": {"default": {"org": "org-1", "token": "sowt_abcdefghijklmnop"}}
    }
    conf("config", "use", "default")
    assert mode(path) == 0o600


def test_write_is_atomic_on_failure(path, monkeypatch):
    profiles.save({"profiles": {"default": {"org": "before"}}})
    import tomli_w

    def broken(data, handle):
        handle.write(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(tomli_w, "dump", broken)
    with pytest.raises(OSError):
        profiles.save({"profiles": {"default": {"org": "after"}}})
    assert profiles.load() == {"profiles": {"default": {"org": "before"}}}
    assert [p.name for p in path.parent.iterdir()] == ["config.toml"]


# --- precedence: option > env > profile > default -------------------------------------


def write_profiles(entries: dict, current: str | None = None) -> None:
    data: dict = {"profiles": entries}
    if current:
        data["current"] = current
    profiles.save(data)


def test_default_is_local_mode_with_default_database(conf):
    shown = mode_of(conf("status", "--json"))
    assert shown["mode"] == "local"
    assert shown["database"].endswith("sowctl.db")
    assert shown["profile"] == "default"


def test_profile_server_selects_remote_mode(conf):
    url = closed_url()
    write_profiles({"default": {"server": url, "token": "sowt_fromprofile00"}})
    shown = mode_of(conf("status", "--json"))
    assert (shown["mode"], shown["server"], shown["identity"]["token"]) == ("remote", url, "sowt_from…")


def test_env_server_overrides_profile_server(conf, monkeypatch):
    profile_url, env_url = closed_url(), "http://127.0.0.1:9"
    write_profiles({"default": {"server": profile_url}})
    monkeypatch.setenv("SOWCTL_SERVER", env_url)
    assert mode_of(conf("status", "--json"))["server"] == env_url


def test_option_overrides_env_and_profile(conf, monkeypatch):
    write_profiles({"default": {"server": "http://127.0.0.1:7", "token": "sowt_profile-token"}})
    monkeypatch.setenv("SOWCTL_SERVER", "http://127.0.0.1:8")
    monkeypatch.setenv("SOWCTL_TOKEN", "sowt_environment-token")
    shown = mode_of(
        conf("--server", "http://127.0.0.1:9", "--token", "sowt_option-token", "status", "--json")
    )
    assert shown["server"] == "http://127.0.0.1:9"
    assert shown["identity"]["token"] == "sowt_opti…"
    shown = mode_of(conf("status", "--json"))
    assert shown["server"] == "http://127.0.0.1:8"
    assert shown["identity"]["token"] == "sowt_envi…"


def test_db_option_overrides_profile_server_and_selects_local_mode(conf, tmp_path):
    write_profiles({"default": {"server": closed_url(), "token": "sowt_x"}})
    db = tmp_path / "local.db"
    assert conf("--db", db, "sows", "create", "Local", "--id", "s-1", "-q").stdout == "s-1\n"
    assert conf("--db", db, "sows", "list", "-q").stdout == "s-1\n"
    shown = mode_of(conf("--db", db, "status", "--json"))
    assert (shown["mode"], shown["database"], shown["server"]) == ("local", str(db), None)


def test_db_env_overrides_profile_server(conf, monkeypatch, tmp_path):
    write_profiles({"default": {"server": closed_url()}})
    monkeypatch.setenv("SOWCTL_DB", str(tmp_path / "env.db"))
    assert mode_of(conf("status", "--json"))["mode"] == "local"


def test_server_env_overrides_profile_db(conf, monkeypatch, tmp_path):
    write_profiles({"default": {"db": str(tmp_path / "p.db")}})
    monkeypatch.setenv("SOWCTL_SERVER", closed_url())
    assert mode_of(conf("status", "--json"))["mode"] == "remote"


def test_server_option_beats_db_env(conf, monkeypatch, tmp_path):
    monkeypatch.setenv("SOWCTL_DB", str(tmp_path / "env.db"))
    url = closed_url()
    shown = mode_of(conf("--server", url, "status", "--json"))
    assert (shown["mode"], shown["server"]) == ("remote", url)


def test_db_option_beats_server_env(conf, monkeypatch, tmp_path):
    monkeypatch.setenv("SOWCTL_SERVER", closed_url())
    shown = mode_of(conf("--db", tmp_path / "x.db", "status", "--json"))
    assert shown["mode"] == "local"


def test_db_and_server_options_together_exit_2(conf, tmp_path):
    result = conf("--db", tmp_path / "x.db", "--server", "http://127.0.0.1:9", "sows", "list")
    assert result.exit_code == 2
    assert result.stderr == "error: --db and --server cannot be used together (local or remote mode?)\n"


def test_db_and_server_env_together_exit_2(conf, monkeypatch, tmp_path):
    monkeypatch.setenv("SOWCTL_DB", str(tmp_path / "x.db"))
    monkeypatch.setenv("SOWCTL_SERVER", "http://127.0.0.1:9")
    assert conf("sows", "list").exit_code == 2


def test_profile_with_db_and_server_exit_2(path, conf):
    path.parent.mkdir(parents=True)
    path.write_text('[profiles.default]\ndb = "/tmp/a.db"\nserver = "http://127.0.0.1:9"\n')
    result = conf("sows", "list")
    assert result.exit_code == 2
    assert "profile default sets both db and server" in result.stderr


def test_profile_selection_option_env_current(conf, monkeypatch):
    write_profiles(
        {
            "a": {"server": "http://127.0.0.1:1", "org": "org-a"},
            "b": {"server": "http://127.0.0.1:2", "org": "org-b"},
            "c": {"server": "http://127.0.0.1:3", "org": "org-c"},
        },
        current="c",
    )
    assert mode_of(conf("status", "--json"))["profile"] == "c"
    monkeypatch.setenv("SOWCTL_PROFILE", "b")
    shown = mode_of(conf("status", "--json"))
    assert (shown["profile"], shown["identity"]["org"]) == ("b", "org-b")
    shown = mode_of(conf("--profile", "a", "status", "--json"))
    assert (shown["profile"], shown["server"]) == ("a", "http://127.0.0.1:1")


def test_unknown_profile_exit_2(conf):
    result = conf("--profile", "ghost", "sows", "list")
    assert result.exit_code == 2
    assert "profile 'ghost' is not in" in result.stderr


def test_profile_values_fill_only_what_is_unset(conf, monkeypatch):
    write_profiles({"default": {"server": "http://127.0.0.1:1", "org": "org-p", "company": "comp-p"}})
    monkeypatch.setenv("SOWCTL_ORG", "org-env")
    shown = mode_of(conf("--company", "comp-opt", "status", "--json"))
    assert shown["identity"] == {"token": None, "apiKey": None, "org": "org-env", "company": "comp-opt"}


@pytest.mark.parametrize(
    ("option", "env", "profile", "expected"),
    [
        (None, None, None, DEFAULT_TIMEOUT),
        (None, None, 3.0, 3.0),
        (None, "4", 3.0, 4.0),
        ("5", "4", 3.0, 5.0),
        ("10", None, 3.0, 10.0),  # an explicit value equal to the default still wins
    ],
)
def test_timeout_precedence(conf, monkeypatch, option, env, profile, expected):
    write_profiles({"default": {"server": closed_url(), **({"timeout": profile} if profile else {})}})
    if env:
        monkeypatch.setenv("SOWCTL_TIMEOUT", env)
    args = ["--timeout", option] if option else []
    assert mode_of(conf(*args, "status", "--json"))["timeout"] == expected


def test_bad_profile_timeout_exit_2(path, conf):
    path.parent.mkdir(parents=True)
    path.write_text('[profiles.default]\ntimeout = "soon"\n')
    result = conf("status")
    assert result.exit_code == 2
    assert "profile default: timeout must be a number" in result.stderr


def test_non_positive_timeout_option_exit_2(conf):
    result = conf("--timeout", "0", "sows", "list")
    assert result.exit_code == 2
    assert "--timeout must be a positive number" in result.stderr


def test_settings_merge_directly():
    write_profiles({"p": {"server": "http://s.example", "token": "t-prof", "timeout": 7}})
    merged = Settings(profile="p", token="t-opt").with_profile().check()
    assert (merged.server, merged.token, merged.timeout, merged.remote) == (
        "http://s.example",
        "t-opt",
        7.0,
        True,
    )
    merged = Settings(db="/tmp/x.db", profile="p").with_profile().check()
    assert (merged.server, merged.db, merged.remote) == (None, "/tmp/x.db", False)


def test_config_list_json_is_valid_when_empty(conf):
    assert json.loads(conf("config", "list", "--json").stdout) == {
        "current": "default",
        "path": str(profiles.config_path()),
        "profiles": {},
    }
