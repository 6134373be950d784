"""The store core: kbdesk's records written once, over an engine and an access policy.

Each store (:class:`kbdesk.store.sqlite.SqliteStore`, :class:`kbdesk.store.postgres.PostgresStore`)
mixes these classes in and gives them ``self.db`` (:class:`kbdesk.store.engine.Engine`),
``self.policy`` (:mod:`kbdesk.store.policy`), ``write()``, ``read()``, ``connection()``
and ``vectors``; the few things stored differently are hooks each engine implements.
"""
