"""BSON: the binary document format of MongoDB, pure Python, no asyncio."""
