"""Shared test helpers (scripted servers, certificates, external servers)."""
