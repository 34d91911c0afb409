"""Slash commands: one extension per command family; each ends in `async def setup(bot)`."""
