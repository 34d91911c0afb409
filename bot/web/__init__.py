"""The bot's own HTTP side: the signed daily-summary hook, health and Prometheus metrics."""
