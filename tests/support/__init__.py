"""Test helpers shared by the test suites (real servers, no mocks)."""
