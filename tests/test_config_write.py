"""kbdesk's own changes to config.toml keep what the user wrote: comments, key order,
layout; the file stays valid TOML with the same meaning, mode 0600."""

import stat
import tomllib

from click.testing import CliRunner

from kbdesk.cli.main import cli
from kbdesk.paths import get_paths

HAND_WRITTEN = """\
# my kbdesk settings
# the laptop's server comes first

[providers.ollama]   # the laptop's
kind = "ollama"
# timeout = 30
timeout = 12.5  # a slow disk

[roles.chat]
provider = "ollama"  # chat here
model = "llama3"

[providers.work]
kind = "openai"
api_key_env = "WORK_KEY" # from the vault

[search]
limit = 7 # more than the default
"""


def _run(*args: str) -> None:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output


def _write(text: str):
    path = get_paths().config_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_provider_add_keeps_every_comment_and_key_order(kbdesk_home):
    path = _write(HAND_WRITTEN)
    _run("provider", "add", "studio", "--kind", "lmstudio")
    _run("provider", "add", "ollama", "--kind", "ollama", "--base-url", "http://127.0.0.1:11500/v1")
    _run("model", "set", "embedding", "ollama", "nomic-embed-text")
    text = path.read_text()
    # every line the user wrote is still there, in the order written
    remaining = iter(text.splitlines())
    for line in filter(None, HAND_WRITTEN.splitlines()):
        assert line in remaining, f"lost or moved: {line!r}"
    data = tomllib.loads(text)
    assert data["providers"]["ollama"] == {"kind": "ollama", "timeout": 12.5, "base_url": "http://127.0.0.1:11500/v1"}
    assert data["providers"]["studio"] == {"kind": "lmstudio"}
    assert data["roles"]["embedding"] == {"provider": "ollama", "model": "nomic-embed-text"}
    assert data["search"] == {"limit": 7}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_remove_takes_only_what_it_names(kbdesk_home):
    path = _write(HAND_WRITTEN)
    _run("provider", "rm", "work")
    text = path.read_text()
    assert "WORK_KEY" not in text and "[providers.work]" not in text
    assert "# my kbdesk settings" in text and "# timeout = 30" in text and "limit = 7 # more than the default" in text
    assert set(tomllib.loads(text)["providers"]) == {"ollama"}


def test_inline_and_dotted_layouts_keep_their_meaning(kbdesk_home):
    """An inline table grows inline; dotted keys that a new table would swallow are written afresh."""
    path = _write('providers = { ollama = { kind = "ollama" } } # inline\n')
    _run("provider", "add", "studio", "--kind", "lmstudio")
    text = path.read_text()
    assert "# inline" in text
    assert tomllib.loads(text)["providers"] == {"ollama": {"kind": "ollama"}, "studio": {"kind": "lmstudio"}}

    path = _write('providers.ollama.kind = "ollama"\nroles.chat = { provider = "ollama", model = "m" }\n')
    _run("provider", "add", "studio", "--kind", "lmstudio")
    data = tomllib.loads(path.read_text())
    assert data["providers"] == {"ollama": {"kind": "ollama"}, "studio": {"kind": "lmstudio"}}
    assert data["roles"] == {"chat": {"provider": "ollama", "model": "m"}}


def test_a_new_file_is_plain_toml(kbdesk_home):
    _run("provider", "add", "studio", "--kind", "lmstudio")
    _run("model", "set", "chat", "studio", "qwen")
    path = get_paths().config_file
    assert tomllib.loads(path.read_text()) == {
        "providers": {"studio": {"kind": "lmstudio"}},
        "roles": {"chat": {"provider": "studio", "model": "qwen"}},
    }
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
