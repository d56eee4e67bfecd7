"""Keychain: the secrets a task needs, resolved inside its activity and nowhere else.

The engine leaves every configuration string that reads ``keychain`` as an unrendered
template (so workflow history only ever holds ``{{ keychain.api.token }}``); the activity
calls :func:`prepare` (``preparation``) to find the entries the task reads (``references``),
resolve them through a :class:`KeychainProvider` (``providers``: environment variables,
then a credentials file, or a deployment's own), render the deferred templates with them,
and hide every secret value again (``scrubbing``: ``***``) before the outcome leaves the
activity.

Providers (see docs/keychain.md): :class:`EnvProvider` reads ``NOETL_KEYCHAIN_<NAME>``
(JSON object, or a DSN / plain string) and ``NOETL_KEYCHAIN_<NAME>_<FIELD>``;
:class:`FileProvider` reads ``$NOETL_CREDENTIALS_FILE`` (default
``~/.config/noetl-temporal/credentials.yaml``). Plug your own (Vault, a cloud secret
manager) with :func:`set_keychain_provider` or ``NOETL_KEYCHAIN_PROVIDER=module:attr``.
"""

from .preparation import Prepared, needs_keychain, prepare
from .providers import (
    ChainProvider,
    EnvProvider,
    FileProvider,
    KeychainError,
    KeychainProvider,
    default_credentials_file,
    env_name,
    get_keychain_provider,
    resolve_entry,
    set_keychain_provider,
)
from .references import referenced_entries
from .scrubbing import MASK, PUBLIC_FIELDS, Scrubber, secret_values

__all__ = [
    "KeychainProvider", "EnvProvider", "FileProvider", "ChainProvider", "KeychainError", "Scrubber",
    "Prepared", "prepare", "needs_keychain", "get_keychain_provider", "set_keychain_provider", "env_name",
    "default_credentials_file", "referenced_entries", "secret_values", "resolve_entry", "MASK", "PUBLIC_FIELDS",
]
