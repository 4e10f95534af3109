"""Shared fixtures. The tiny model and the llama-server fixtures are session-scoped (see tests/fixtures)."""

pytest_plugins = ["tests.fixtures.llama"]
