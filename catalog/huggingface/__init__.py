"""Hugging Face `config.json` → catalog `Model`: pure derivation and the bounds a config must respect."""
