"""Every test belongs to exactly one tier (pytest.ini's markers): `host` or `vm`."""

import pytest

TIERS = ("host", "vm")


def pytest_collection_modifyitems(config, items):
    """Fails the collection when a test has no tier or both (a new test must say which)."""
    wrong = [item.nodeid for item in items
             if sum(item.get_closest_marker(t) is not None for t in TIERS) != 1]
    if wrong:
        raise pytest.UsageError(f"{len(wrong)} tests without exactly one tier marker (host or "
                                f"vm), such as {', '.join(wrong[:3])}")
