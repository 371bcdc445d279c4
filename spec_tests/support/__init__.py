"""Helpers shared by the spec-suite runners."""
