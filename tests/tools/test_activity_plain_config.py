"""The attempt's one-walk check that a task's configuration needs no preparation."""

from noetl_temporal.attempt import _plain


def test_literal_configs_are_plain() -> None:
    assert _plain({"code": "def main(i):\n    return {'i': i + 1}\n", "in_worker": True, "input": {"i": 1}})
    assert _plain({"items": [1, "a", None, {"x": [True, 2.5]}], "kind": "python"})


def test_templates_and_result_refs_are_not() -> None:
    assert not _plain({"url": "{{ keychain.api.url }}"})
    assert not _plain({"input": {"n": ["{{ _attempt }}"]}})
    assert not _plain({"args": {"text": "{% if x %}y{% endif %}"}})
    assert not _plain({"input": {"made": {"kind": "result_ref", "ref": "noetl://x"}}})
    assert not _plain({"deep": ({"kind": "result_ref"},)})
