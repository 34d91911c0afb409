"""discord.ui views: the buttons and menus a reply carries (pages, report confirmation, report deletion)."""
