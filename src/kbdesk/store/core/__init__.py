"""The store core: kbdesk's records written once, over an engine and an access policy.

Composed repositories (:mod:`.compose`): the documents (:mod:`.documents`,
:mod:`.claiming`, :mod:`.ready`), the transfer (:mod:`.bulk`), the embedding cache
(:mod:`.cache`), and the chat's conversations, personas, notes and their own rows
(:mod:`.chat`, :mod:`.personas`, :mod:`.notes`, :mod:`.own_rows`), each given the
store's :class:`~.compose.Base`, the KB records it needs (:class:`~.parts.KbRecords`)
and, where the engines differ, an engine object behind a protocol of its own
(:class:`~.parts.ChunkStorage`, :class:`~.parts.BulkStorage`, …). The KB records
and the lookup (:mod:`.records`, :mod:`.facts`) are still classes each store inherits
(:class:`~.parts.StoreParts`).
"""
