"""Everything in ``noetl_temporal.__all__`` resolves (the public API stays importable)."""

import noetl_temporal


def test_every_public_name_resolves():
    for name in noetl_temporal.__all__:
        assert getattr(noetl_temporal, name) is not None, name
