"""The pure (sans-I/O) core: no asyncio, socket, ssl or time imports; time and randomness
come in as arguments so every rule can be tested deterministically."""
