"""Fixtures for the generate tests: the fake driver (tests/fake_nvml)."""

from tests.fake_nvml.fixtures import fake_node, fake_nvml_library

__all__ = ["fake_node", "fake_nvml_library"]
