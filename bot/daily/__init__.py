"""Daily summaries posted in a channel: composing them and delivering each exactly once."""
