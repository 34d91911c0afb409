"""One extension per feature; each ends in `async def setup(bot)`."""
