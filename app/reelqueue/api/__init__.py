"""The HTTP API (issue 14): a third thin front end over the application layer, served by
aiohttp on the engine's own asyncio loop. See docs/api.md."""
