"""Provider adapters: one file per provider, each taking an ``httpx2.AsyncClient``."""
