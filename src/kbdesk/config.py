"""The user's settings: ``config.toml``, typed and validated.

Every section is a dataclass with a docstring per field. An unknown key or a value of
the wrong type is a :class:`ConfigError` whose message is one line naming the key.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kbdesk.errors import ConfigError
from kbdesk.providers.settings import ProviderSettings
from kbdesk.remote.names import NAME, RESERVED
from kbdesk.remote.settings import RemoteSettings

VectorBackendName = Literal["auto", "sqlite-vec", "numpy"]
TeamRole = Literal["member", "admin"]
SearchMode = Literal["auto", "vector", "keyword", "hybrid"]
FusionName = Literal["convex", "rrf"]
OCR_LANGUAGES = re.compile(r"[A-Za-z0-9_]{2,40}(\+[A-Za-z0-9_]{2,40})*")  # Tesseract's "eng+deu"


@dataclass
class StorageSettings:
    db: str | None = None
    """Database file to use instead of the default one in the data directory, or a
    postgresql:// URI (Postgres mode; keep any password in PGPASSWORD or ~/.pgpass)."""
    max_file_mb: float = 10.0
    """Largest document accepted, in megabytes."""


@dataclass
class SearchSettings:
    limit: int = 5
    """Results returned when a search does not say (1-20)."""
    threshold: float = 0.3
    """Minimum cosine similarity of a vector result (0-1)."""
    mode: SearchMode = "auto"
    """auto (hybrid when vectors exist, keyword otherwise), vector, keyword or hybrid."""
    fusion: FusionName = "convex"
    """How hybrid mode combines its rankings: convex (weighted scores) or rrf (reciprocal ranks)."""
    alpha: float = 0.7
    """Weight of the vector side in convex fusion (0-1; the keyword side gets the rest)."""


@dataclass
class VectorSettings:
    backend: VectorBackendName = "auto"
    """auto (sqlite-vec when it loads, numpy otherwise), sqlite-vec or numpy."""
    quantize_above: int = 250_000
    """KBs with more chunks than this are searched by binary-quantised vectors (sign bits
    scanned by Hamming distance, the best candidates rescored exactly) instead of an exact
    scan; 0 keeps every KB exact (docs/BENCHMARKS-scale.md)."""
    oversample: int = 10
    """Quantised search rescores this many candidates per result asked for (at least 500);
    higher is slower and closer to exact."""


@dataclass
class ChunkingSettings:
    chunk_size: int = 1000
    """Target characters per chunk for new knowledge bases."""
    chunk_overlap: int = 200
    """Characters shared by neighbouring chunks for new knowledge bases."""


@dataclass
class IngestSettings:
    workers: int = 3
    """Documents processed at once (extraction, chunking, embedding)."""
    pdf_timeout: float = 30.0
    """Seconds one PDF may take to extract before it fails."""
    pdf_memory_mb: int = 512
    """Memory one PDF extraction may use before it fails (OCR of a scan or an image too)."""
    ocr_languages: str | None = None
    """Languages OCR reads, as Tesseract names them ("eng+deu"); unset: the installed
    language packs (English and your locale's language when more than three)."""
    tesseract: str | None = None
    """The tesseract program for OCR of scans, screenshots and photos; unset: found on PATH."""
    auto_resume: bool = False
    """The TUI resumes documents a stopped run left unfinished as soon as it finds them."""


RetrievalPolicy = Literal["auto", "tool", "always", "off"]


@dataclass
class ChatSettings:
    retrieval: RetrievalPolicy = "auto"
    """How a chat consults the active KBs: auto (the model may call kb_search; when it
    answers without, kbdesk searches itself and answers from the passages), tool (only
    when the model calls kb_search, said when it did not), always (kbdesk searches before
    every answer) or off. Personas and conversations may choose their own."""
    max_tokens: int = 1024
    """Longest answer asked of the model, in tokens (personas may choose their own)."""
    context_window: int | None = None
    """The chat model's context window in tokens when its server does not say (llama.cpp,
    Ollama, LM Studio and vLLM do); unset: 4096."""
    timeout: float = 600.0
    """Seconds to wait for a model that has not started or stopped answering (a local
    model reading a long prompt can take minutes) before giving up; 'waiting for the
    model' is shown meanwhile."""


@dataclass
class RoleSettings:
    provider: str | None = None
    """Name of a [providers.NAME] table that serves this role."""
    model: str | None = None
    """Model id, typed by hand or picked from the provider's list."""


@dataclass
class RolesSettings:
    embedding: RoleSettings = field(default_factory=RoleSettings)
    """Embedding model given to new knowledge bases (each KB then keeps its own)."""
    chat: RoleSettings = field(default_factory=RoleSettings)
    """Chat model of the chat pane and `kbdesk ask`."""


@dataclass
class IdentitySettings:
    """Who you are on a Postgres database that your login owns (or as a superuser): a
    local single-user server, or the administrator. Ignored for a kbdesk user of a
    team server (``kbdesk pg grant``): there the database login is the user, and the
    database says whether they are an admin and which teams they are in."""

    user_id: str | None = None
    """Your user id (a UUID) on a Postgres database you own; default: derived from username."""
    username: str | None = None
    """Your user name on a Postgres database you own; default: your login name."""
    admin: bool = False
    """System admin on a Postgres database you own: creates global KBs, changes any KB's discoverable flag."""
    teams: dict[str, TeamRole] = field(default_factory=dict)
    """Your teams on a Postgres database you own (by id or name): "member" or "admin" (admins create team KBs)."""


@dataclass
class Config:
    storage: StorageSettings = field(default_factory=StorageSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    vector: VectorSettings = field(default_factory=VectorSettings)
    chunking: ChunkingSettings = field(default_factory=ChunkingSettings)
    ingest: IngestSettings = field(default_factory=IngestSettings)
    roles: RolesSettings = field(default_factory=RolesSettings)
    chat: ChatSettings = field(default_factory=ChatSettings)
    """How chats retrieve, how long answers may be, the model's context ([chat])."""
    identity: IdentitySettings = field(default_factory=IdentitySettings)
    """Who you are on a Postgres database your login owns: [identity] (ignored for a team server's users)."""
    providers: dict[str, ProviderSettings] = field(default_factory=dict)
    """Embedding (and chat) providers by name: [providers.NAME] tables."""
    remotes: dict[str, RemoteSettings] = field(default_factory=dict)
    """Team servers whose knowledge bases are searched beside the local ones: [remotes.NAME] tables."""

    def __post_init__(self) -> None:
        _check_ranges(self)


def _check_ranges(cfg: Config) -> None:
    if not 1 <= cfg.search.limit <= 20:
        raise ConfigError(f"config: search.limit must be between 1 and 20, got {cfg.search.limit}")
    if not 0.0 <= cfg.search.alpha <= 1.0:
        raise ConfigError(f"config: search.alpha must be between 0 and 1, got {cfg.search.alpha}")
    if not 0.0 <= cfg.search.threshold <= 1.0:
        raise ConfigError(f"config: search.threshold must be between 0 and 1, got {cfg.search.threshold}")
    if cfg.storage.max_file_mb <= 0:
        raise ConfigError("config: storage.max_file_mb must be positive")
    if cfg.chunking.chunk_size < 1:
        raise ConfigError("config: chunking.chunk_size must be at least 1")
    if not 0 <= cfg.chunking.chunk_overlap < cfg.chunking.chunk_size:
        raise ConfigError("config: chunking.chunk_overlap must be at least 0 and less than chunking.chunk_size")
    for role in ("embedding", "chat"):
        chosen = getattr(cfg.roles, role)
        if chosen.provider and chosen.provider not in cfg.providers:
            raise ConfigError(
                f"config: roles.{role}.provider names '{chosen.provider}', which is not a [providers.NAME] table"
            )
    for name in cfg.remotes:
        if not NAME.match(name) or name in RESERVED:
            raise ConfigError(f"config: remotes.{name}: a remote's name is a lowercase word (a-z, digits, '-', '_')")
    if not 1 <= cfg.ingest.workers <= 32:
        raise ConfigError(f"config: ingest.workers must be between 1 and 32, got {cfg.ingest.workers}")
    if cfg.vector.quantize_above < 0:
        raise ConfigError(f"config: vector.quantize_above must be 0 or more, got {cfg.vector.quantize_above}")
    if not 1 <= cfg.vector.oversample <= 1000:
        raise ConfigError(f"config: vector.oversample must be between 1 and 1000, got {cfg.vector.oversample}")
    if cfg.ingest.pdf_timeout <= 0 or cfg.ingest.pdf_memory_mb < 64:
        raise ConfigError("config: ingest.pdf_timeout must be positive and ingest.pdf_memory_mb at least 64")
    if cfg.ingest.ocr_languages is not None and not OCR_LANGUAGES.fullmatch(cfg.ingest.ocr_languages):
        raise ConfigError(
            f"config: ingest.ocr_languages must be Tesseract language codes joined by '+' (e.g. eng+deu), "
            f"got {cfg.ingest.ocr_languages!r}"
        )


def _type_name(value: Any) -> str:
    return {
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        dict: "a table",
        list: "an array",
    }.get(type(value), type(value).__name__)


def _coerce(value: Any, annotation: Any, key: str) -> Any:
    """Check ``value`` against a field annotation; return the value to store."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(annotation)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, key)
            except ConfigError as exc:
                errors.append(exc)
        raise errors[0]
    if origin is Literal:
        choices = typing.get_args(annotation)
        if value not in choices:
            wanted = ", ".join(repr(c) for c in choices)
            raise ConfigError(f"config: {key} must be one of {wanted}, got {value!r}")
        return value
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        if not isinstance(value, dict):
            raise ConfigError(f"config: {key} must be a table, got {_type_name(value)}")
        return _build(annotation, value, key + ".")
    if annotation is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"config: {key} must be a boolean, got {_type_name(value)}")
        return value
    if annotation is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"config: {key} must be an integer, got {_type_name(value)}")
        return value
    if annotation is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"config: {key} must be a number, got {_type_name(value)}")
        return float(value)
    if annotation is str:
        if not isinstance(value, str):
            raise ConfigError(f"config: {key} must be a string, got {_type_name(value)}")
        return value
    if origin is dict:
        _, value_type = typing.get_args(annotation)
        if not isinstance(value, dict):
            raise ConfigError(f"config: {key} must be a table, got {_type_name(value)}")
        out = {}
        for name, item in value.items():
            try:
                out[name] = _coerce(item, value_type, f"{key}.{name}")
            except ConfigError as exc:
                raise ConfigError(
                    str(exc)
                    .replace("provider settings:", f"{key}.{name}:")
                    .replace("remote settings:", f"{key}.{name}:")
                ) from None
        return out
    raise TypeError(f"unsupported config annotation {annotation!r}")  # a bug, not user input


def _build(cls: type, data: dict[str, Any], prefix: str = "") -> Any:
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    kwargs = {}
    for key, value in data.items():
        if key not in names:
            raise ConfigError(f"config: unknown key '{prefix}{key}'")
        kwargs[key] = _coerce(value, hints[key], prefix + key)
    return cls(**kwargs)


def parse_config(data: dict[str, Any]) -> Config:
    """Build a validated :class:`Config` from a parsed TOML document."""
    return _build(Config, data)


def load_config(path: Path) -> Config:
    """Read ``path``; a missing file means all defaults."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Config()
    except OSError as exc:
        raise ConfigError(f"config: cannot read {path}: {exc.strerror}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"config: {path} is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config: {path} is not valid TOML: {exc}") from None
    try:
        return parse_config(data)
    except ConfigError as exc:
        raise ConfigError(f"{exc} (in {path})") from None


def vector_backend_override() -> str | None:
    """``KBDESK_VECTOR_BACKEND`` from the environment, validated."""
    value = os.environ.get("KBDESK_VECTOR_BACKEND")
    if not value:
        return None
    if value not in ("auto", "sqlite-vec", "numpy"):
        raise ConfigError(f"KBDESK_VECTOR_BACKEND must be auto, sqlite-vec or numpy, got {value!r}")
    return value
