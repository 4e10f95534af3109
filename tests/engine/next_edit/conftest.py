"""Fixtures for the next-edit tests: the backends' loopback fake servers (`serve`)."""

from tests.engine.backends.conftest import serve  # noqa: F401  (a fixture, used by name)
