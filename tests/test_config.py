"""config.toml is validated: a wrong key or type is one clear line naming the key."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from kbdesk.cli.main import cli
from kbdesk.config import Config, load_config, parse_config
from kbdesk.errors import ConfigError
from kbdesk.paths import get_paths, resolve_db


def write_config(home: Path, text: str) -> Path:
    path = get_paths().config_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_missing_file_means_defaults(kbdesk_home):
    cfg = load_config(get_paths().config_file)
    assert cfg == Config()
    assert (cfg.search.limit, cfg.search.threshold, cfg.search.mode) == (5, 0.3, "auto")
    assert (cfg.chunking.chunk_size, cfg.chunking.chunk_overlap) == (1000, 200)


def test_values_are_read(kbdesk_home):
    path = write_config(
        kbdesk_home,
        '[search]\nlimit = 8\nthreshold = 0.5\nmode = "keyword"\n'
        '[vector]\nbackend = "numpy"\n[storage]\nmax_file_mb = 2\n',
    )
    cfg = load_config(path)
    assert cfg.search.limit == 8 and cfg.search.threshold == 0.5 and cfg.search.mode == "keyword"
    assert cfg.vector.backend == "numpy"
    assert cfg.storage.max_file_mb == 2.0


@pytest.mark.parametrize(
    "text, message",
    [
        ("[search]\nlimt = 3\n", "unknown key 'search.limt'"),
        ("colour = 'blue'\n", "unknown key 'colour'"),
        ("[search]\nlimit = 'five'\n", "search.limit must be an integer, got a string"),
        ("[search]\nlimit = true\n", "search.limit must be an integer, got a boolean"),
        ("[search]\nthreshold = 'high'\n", "search.threshold must be a number"),
        ("[search]\nmode = 'fuzzy'\n", "search.mode must be one of"),
        ("search = 3\n", "search must be a table"),
        ("[search]\nlimit = 50\n", "search.limit must be between 1 and 20"),
        ("[chunking]\nchunk_size = 100\nchunk_overlap = 100\n", "chunking.chunk_overlap"),
        ("[search\nlimit = 3\n", "is not valid TOML"),
    ],
)
def test_bad_config_is_one_line_naming_the_key(kbdesk_home, text, message):
    path = write_config(kbdesk_home, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    text_of_error = str(info.value)
    assert message in text_of_error
    assert "\n" not in text_of_error


def test_cli_reports_a_bad_config_without_traceback(kbdesk_home):
    write_config(kbdesk_home, "[search]\nlimt = 3\n")
    result = CliRunner().invoke(cli, ["kb", "list"])
    assert result.exit_code == 1
    assert "unknown key 'search.limt'" in result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_parse_config_builds_typed_sections():
    cfg = parse_config({"search": {"limit": 3}})
    assert cfg.search.limit == 3 and cfg.search.threshold == 0.3


def test_home_moves_every_path(tmp_path, monkeypatch):
    monkeypatch.setenv("KBDESK_HOME", str(tmp_path / "h"))
    paths = get_paths()
    for p in (paths.config_dir, paths.data_dir, paths.cache_dir, paths.default_db):
        assert str(p).startswith(str(tmp_path / "h"))


def test_db_selection_order(tmp_path, monkeypatch):
    paths = get_paths()
    assert resolve_db(paths) == paths.default_db
    monkeypatch.setenv("KBDESK_DB", str(tmp_path / "env.db"))
    assert resolve_db(paths) == tmp_path / "env.db"
    assert resolve_db(paths, tmp_path / "arg.db") == tmp_path / "arg.db"
