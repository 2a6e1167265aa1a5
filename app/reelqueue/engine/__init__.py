"""The engine: pump, render lifecycle, recovery and heartbeat. Plain asyncio, no Qt."""
