"""The filter fields, declared once: every face's form of a filter is made from this table.

:class:`kbdesk.filters.Filters` reads and writes its JSON form from it; the CLI's flags
(``cli/filter_options.py``), the filter line's words (``filters_text.py``), the HTTP
search body's ``filters`` model (``serve/schemas.py``), the ``kb_search`` tool's schema
for the chat model and MCP (``chat/tools.py``) and the table in docs/SEARCH.md are made
from (or checked against) :data:`FIELDS`. A new field is one entry here, its attribute on
``Filters`` and its test in ``Filters.admits``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["globs", "types", "tags", "since", "until", "choice"]

DATE_FIELDS = ("modified", "indexed", "document")
"""What ``since``/``until`` compare: the file's modified time (default), when kbdesk indexed it,
or the date the document gives itself."""


@dataclass(frozen=True)
class FilterField:
    key: str
    """Its name in the JSON form (HTTP, MCP, the model's ``kb_search``, the library's dict)."""
    attr: str
    """The :class:`~kbdesk.filters.Filters` attribute it fills."""
    kind: Kind
    """How a value is read: globs (a string or a list; ``split``: commas separate them), file
    types, tags, a start or end date, or one of ``choices``."""
    flag: str
    """The CLI flag (``--path``)."""
    param: str
    """The click parameter the flag fills."""
    words: tuple[str, ...]
    """The filter line's words for it, the first shown (``not`` for ``exclude``)."""
    metavar: str
    help: str
    """What it does, for people: CLI help, the HTTP schema, docs."""
    tool: str
    """What it does, for a model (the ``kb_search`` tool's schema): short, with an example."""
    aliases: tuple[str, ...] = ()
    """Other keys the JSON form accepts for it."""
    split: bool = True
    """Whether a string value holds several, comma-separated (a glob may hold commas: no)."""
    choices: tuple[str, ...] = ()
    example: str | list[str] | None = None

    @property
    def many(self) -> bool:
        """Repeatable on the CLI; a list (or a comma-separated string) in JSON."""
        return self.kind in ("globs", "types", "tags")


FIELDS: tuple[FilterField, ...] = (
    FilterField(
        key="path",
        attr="path",
        kind="globs",
        split=False,
        flag="--path",
        param="path_globs",
        words=("path",),
        metavar="GLOB",
        help="Only documents whose path (relative to the folder they were added from) matches one of these "
        "globs ('projects/**' any depth, 'work/*' one level, '*.md').",
        tool="Glob of document paths, e.g. projects/** or *.md",
        example="projects/**",
    ),
    FilterField(
        key="exclude",
        attr="exclude",
        kind="globs",
        flag="--exclude",
        param="exclude_globs",
        words=("not", "exclude"),
        metavar="GLOB",
        help="Leave out documents whose path matches one of these globs.",
        tool="Glob of document paths to leave out",
        example=["drafts/**"],
    ),
    FilterField(
        key="type",
        attr="types",
        kind="types",
        aliases=("types",),
        flag="--type",
        param="file_types",
        words=("type", "types"),
        metavar="TYPES",
        help="Only these file types (extensions, any case), one of which must match: 'pdf,md'.",
        tool="File types, comma-separated, e.g. pdf,md",
        example="pdf,md",
    ),
    FilterField(
        key="since",
        attr="since",
        kind="since",
        flag="--since",
        param="since",
        words=("since",),
        metavar="DATE",
        help="Only documents dated at or after this ISO-8601 day or time (2026-11-01, 2026-11-01T09:30Z).",
        tool="Only documents dated on or after this day (YYYY-MM-DD)",
        example="2026-11-01",
    ),
    FilterField(
        key="until",
        attr="until",
        kind="until",
        flag="--until",
        param="until",
        words=("until",),
        metavar="DATE",
        help="Only documents dated before the end of this day (or before this time).",
        tool="Only documents dated on or before this day (YYYY-MM-DD)",
    ),
    FilterField(
        key="date",
        attr="date_field",
        kind="choice",
        choices=DATE_FIELDS,
        flag="--date",
        param="date_field",
        words=("date",),
        metavar="WHICH",
        help="What since/until compare: the file's modified time (default), when it was indexed, or the date "
        "the document gives itself (front matter date: or created:, an e-mail's Date:, the created date of an "
        "Office, OpenDocument or EPUB file; a document without one that parses is left out).",
        tool="Which date since/until compare: modified (the file's, the default), indexed, "
        "or document (the date written in the document: front matter date:, an e-mail's date)",
    ),
    FilterField(
        key="tags",
        attr="tags",
        kind="tags",
        aliases=("tag",),
        flag="--tag",
        param="tags",
        words=("tag", "tags"),
        metavar="TAG",
        help="Only documents carrying every one of these tags (front matter tags: and inline #tags; any case, "
        "no '#'; a nested tag work/infra also counts as work).",
        tool="Tags every document must have, comma-separated (work also matches work/infra)",
        example=["q3"],
    ),
    FilterField(
        key="any_tags",
        attr="any_tags",
        kind="tags",
        flag="--any-tag",
        param="any_tags",
        words=("any", "any_tag", "any_tags"),
        metavar="TAG",
        help="Only documents carrying at least one of these tags.",
        tool="Tags of which a document needs at least one",
    ),
    FilterField(
        key="not_tags",
        attr="not_tags",
        kind="tags",
        flag="--not-tag",
        param="not_tags",
        words=("nottag", "not_tag", "not_tags"),
        metavar="TAG",
        help="Leave out documents carrying any of these tags (a nested tag work/infra also counts as work).",
        tool="Tags whose documents are left out, comma-separated (e.g. draft,archive)",
        example=["draft"],
    ),
)
"""Every filter field, in the order help text and the docs list them."""

BY_KEY: dict[str, FilterField] = {k: f for f in FIELDS for k in (f.key, *f.aliases)}
"""A field by its JSON key or one of its aliases."""
