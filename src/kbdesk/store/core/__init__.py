"""The store core: kbdesk's records written once, over an engine and an access policy.

Composed repositories (:mod:`.compose`): the KB records (:mod:`.records`) and the audit
log (:mod:`.audit`), the search filters resolved to documents (:mod:`.facts`), the documents (:mod:`.documents`,
:mod:`.claiming`, :mod:`.ready`), the transfer (:mod:`.bulk`), the embedding cache
(:mod:`.cache`), and the chat's conversations, personas, notes and their own rows
(:mod:`.chat`, :mod:`.personas`, :mod:`.notes`, :mod:`.own_rows`), each given the
store's :class:`~.compose.Base`, the KB records it needs (:class:`~.parts.KbRecords`)
and, where the engines differ, an engine object behind a protocol of its own
(:class:`~.parts.ChunkStorage`, :class:`~.parts.BulkStorage`, …). Each engine's
retrieval is a repository of the engine (:mod:`kbdesk.store.sqlite.lookup`,
:mod:`kbdesk.store.postgres.lookup`).
"""
