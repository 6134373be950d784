"""``kbdesk token create|list|revoke``: a token is shown once and kept only as a hash."""

from __future__ import annotations

import json

from click.testing import CliRunner

from kbdesk.cli.main import cli
from kbdesk.paths import get_paths


def kbdesk(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_a_token_is_printed_once_and_only_its_hash_is_kept(kbdesk_home):
    made = kbdesk("token", "create", "--user", "me", "--json")
    assert made.exit_code == 0, made.output
    info = json.loads(made.stdout)
    secret = info["token"]
    assert secret.startswith("kbd_") and len(secret) == 47
    assert (info["user"], info["permissions"]) == ("me", ["kb.create", "kb.write"])
    plain = kbdesk("token", "create", "--user", "ci", "--read-only", "--label", "build\x1b[31m box")
    assert plain.exit_code == 0 and plain.stdout.strip().startswith("kbd_")
    assert "read and search only" in plain.stderr and "shown only now" in plain.stderr
    data = b"".join(p.read_bytes() for p in get_paths().data_dir.glob("kbdesk.db*"))
    assert secret.encode() not in data and secret[12:].encode() not in data

    listed = json.loads(kbdesk("token", "list", "--json").stdout)
    assert [(t["user"], t["permissions"], t["prefix"]) for t in listed] == [
        ("me", ["kb.create", "kb.write"], secret[:12]),
        ("ci", [], plain.stdout.strip()[:12]),
    ]
    assert all("token" not in t and "token_hash" not in t for t in listed)
    shown = kbdesk("token", "list")
    assert secret[:12] in shown.stdout and secret[12:] not in shown.stdout and "\x1b" not in shown.stdout
    assert listed[1]["label"] == "build [31m box"  # control characters never stored


def test_revoking_a_token_by_its_prefix(kbdesk_home):
    secret = json.loads(kbdesk("token", "create", "--user", "me", "--json").stdout)["token"]
    revoked = kbdesk("token", "revoke", secret[:12])
    assert revoked.exit_code == 0 and "Revoked" in revoked.stdout
    assert kbdesk("token", "list", "--json").stdout.strip() == "[]"
    everything = json.loads(kbdesk("token", "list", "--all", "--json").stdout)
    assert everything[0]["revoked_at"] is not None
    assert kbdesk("token", "revoke", secret[:12]).exit_code == 0  # again: nothing changes
    missing = CliRunner().invoke(cli, ["token", "revoke", "kbd_nothing"])
    assert missing.exit_code == 1 and "no token" in missing.stderr


def test_bad_token_requests_are_one_line_errors(kbdesk_home):
    for args, words in [
        (["token", "create"], "--user"),
        (["token", "create", "--user", "me", "-p", "kb.admin"], "kb.admin"),
        (["token", "create", "--user", "me", "--read-only", "-p", "kb.write"], "exclude"),
        (["token", "create", "--user", "line\nbreak"], "one line"),
    ]:
        result = CliRunner().invoke(cli, args)
        assert result.exit_code != 0 and words in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr
    assert kbdesk("token", "list", "--json").stdout.strip() == "[]"
