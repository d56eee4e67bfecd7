"""The one client module the CLI and the API use to talk to Temporal."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError

from ..conversion.converter import CODEC_ENV, configured_data_converter
from ..dsl.models import Playbook, playbook_definition
from ..engine.payload_size import PAYLOAD_FIX, payload_refusal
from ..errors import ConfigError, PayloadTooLarge
from ..workflow.naming import new_execution_id
from ..workflow.starts import execution_start
from ..workflow.subplaybooks import located_source
from ..workflow.types import DEFAULT_TASK_QUEUE, WORKFLOW_NAME
from .close_status import normalized_state

log = logging.getLogger("noetl_temporal")

__all__ = ["Target", "resolve_target", "connect", "start_execution", "new_execution_id",
           "normalized_state"]


@dataclass
class Target:
    """Where Temporal is. ``address=None`` means: start the embedded dev server."""

    address: str | None
    namespace: str = "default"
    task_queue: str = DEFAULT_TASK_QUEUE
    profile: str | None = None
    connect_config: dict[str, Any] | None = None
    #: ``module:factory`` of the deployment's own converter or codec (``--codec``/``$NOETL_CODEC``)
    codec: str | None = None


def resolve_target(address: str | None = None, namespace: str | None = None,
                   task_queue: str | None = None, profile: str | None = None,
                   codec: str | None = None) -> Target:
    """Where Temporal is: the flag, else Temporal's own client settings, else embedded.

    Temporal's settings are its environment variables (``TEMPORAL_ADDRESS``,
    ``TEMPORAL_NAMESPACE``, ``TEMPORAL_API_KEY``, ``TEMPORAL_TLS_*``) over a profile of its
    config file (``--profile``/``TEMPORAL_PROFILE``, file ``TEMPORAL_CONFIG_FILE`` or
    ``~/.config/temporalio/temporal.toml``), read by the SDK's envconfig, so TLS and an API
    key (Temporal Cloud) come along with the address. A bare ``--address`` connects plainly,
    unless a profile is named too (its TLS and API key then apply to that address).
    ``codec``: the deployment's converter or codec (default ``$NOETL_CODEC``, see ``.converter``).
    """
    codec = codec or os.environ.get(CODEC_ENV) or None
    queue = task_queue or os.environ.get("NOETL_TASK_QUEUE") or DEFAULT_TASK_QUEUE
    ns = namespace or os.environ.get("TEMPORAL_NAMESPACE")
    profile = profile or os.environ.get("TEMPORAL_PROFILE")
    if address and not profile:
        return Target(address=address, namespace=ns or "default", task_queue=queue, codec=codec)
    config = _profile_config(profile) or {}
    host = address or config.get("target_host") or os.environ.get("TEMPORAL_ADDRESS")
    if host:
        return Target(address=host, namespace=ns or config.get("namespace") or "default",
                      task_queue=queue, profile=profile, connect_config=config or None, codec=codec)
    return Target(address=None, namespace=ns or "default", task_queue=queue, codec=codec)


def _profile_config(profile: str | None) -> dict[str, Any] | None:
    """A profile from Temporal's config file (namespace, TLS, API key), if one exists."""
    try:
        from temporalio.envconfig import ClientConfig
        config = ClientConfig.load_client_connect_config(profile=profile)
    except Exception:  # no file, or no such profile: not an error unless asked for
        if profile:
            raise ConfigError(f"Temporal config profile {profile!r} could not be loaded",
                              fix="check `temporal config list`, or pass --address") from None
        return None
    return dict(config) if config else None


async def connect(target: Target, *, tracing: bool | None = None) -> Client:
    """A client (and the workers built on it) for ``target``; ``tracing``: OpenTelemetry
    spans for starts, workflows and activities (default: ``$NOETL_TRACING``, see .tracing)."""
    if target.address is None:
        raise ConfigError("no Temporal address", fix="pass --address or set TEMPORAL_ADDRESS")
    from ..hosting.runtime import install_runtime
    from ..workflow.tracing import client_interceptors

    install_runtime()
    kwargs: dict[str, Any] = dict(target.connect_config or {})
    kwargs["target_host"] = target.address
    kwargs["namespace"] = target.namespace
    kwargs.setdefault("data_converter", configured_data_converter(target.codec))
    kwargs["interceptors"] = [*kwargs.get("interceptors", []), *client_interceptors(tracing)]
    try:
        return await Client.connect(**kwargs)
    except Exception as exc:
        raise ConfigError(f"cannot reach Temporal at {target.address} (namespace {target.namespace}): {exc}",
                          fix="start a Temporal server there, or drop --address to use the embedded one") from None


async def start_execution(client: Client, playbook: Playbook, *, payload: dict[str, Any] | None = None,
                          task_queue: str = DEFAULT_TASK_QUEUE, execution_id: str | None = None,
                          source: str | None = None, search_attributes: bool = False,
                          heartbeat_timeout_s: float = 30.0,
                          execution_timeout_s: float | None = None,
                          continue_as_new_after_events: int = 0, version: int | None = None,
                          api_url: str | None = None, definition: dict[str, Any] | None = None,
                          digest: str | None = None, persist_events: bool = True,
                          redrive: dict[str, Any] | None = None,
                          payload_checked: bool = False, test_clock: bool = False) -> WorkflowHandle[Any, Any]:
    """Start one execution, id ``<playbook-name>-<short id>`` unless given.

    ``search_attributes``: set ours (a namespace without them registered: a warning, and the
    execution starts without them; ``noetl-temporal setup`` registers them);
    ``api_url``: the API's base URL, linked from the run's details in the Temporal UI.
    ``definition``/``digest``: ``playbook_definition(playbook)`` and its
    ``labels.definition_hash``, when the caller keeps them (the API, per cached playbook);
    otherwise made here. The definition is only read (the workflow input carries it to the
    data converter, which encodes it), so a caller may share one between starts.
    ``source``: where the playbook came from (a file, ``inline``, ``catalog:<path>@<version>``);
    a relative file path is recorded absolute, against this process's working directory.
    ``persist_events=False``: the execution writes no events to the event store (they stay
    readable live, from the workflow, while it runs): a diagnostic of what storing them costs.
    ``redrive``: a redrive's plan (``client/redrive_start.py`` builds it and calls this).
    ``payload_checked``: the caller has already refused a payload over ``MAX_PAYLOAD_SIZE`` in
    its own words (the API's 413), so it is not walked a second time here.
    ``test_clock``: only ``noetl-temporal test --temporal`` (workflow/test_clock.py).
    """
    refused = None if payload_checked else payload_refusal(payload)
    if refused is not None:   # the workflow could not decode it in one activation
        raise PayloadTooLarge(refused, fix=PAYLOAD_FIX)
    # A relative file source becomes absolute here, in the caller's directory: a worker
    # elsewhere finds a relative sub-playbook next to the parent file (subplaybooks.py).
    source = located_source(source)
    if definition is None:
        definition = playbook_definition(playbook)
    execution_id = execution_id or new_execution_id(playbook.metadata.name or playbook.metadata.path)
    link = f"{api_url.rstrip('/')}/executions/{execution_id}" if api_url else None
    plan = execution_start(definition, execution_id=execution_id, payload=payload, source=source,
                           search_attributes=search_attributes,
                           timeout_s=execution_timeout_s or playbook.executor.spec.timeout_s,
                           digest=digest, version=version, api_url=link,
                           heartbeat_timeout_s=heartbeat_timeout_s,
                           continue_as_new_after_events=continue_as_new_after_events,
                           persist_events=persist_events, redrive=redrive, test_clock=test_clock)

    async def start(options: dict[str, Any]) -> WorkflowHandle[Any, Any]:
        return await client.start_workflow(WORKFLOW_NAME, plan.input, task_queue=task_queue, **options)

    try:
        return await start(plan.options)
    except RPCError as err:
        if not search_attributes or "search attribute" not in str(err).lower():
            raise
    without_redrive = plan.without_redrive_attribute()
    if without_redrive is not None:   # set up before NoetlRedrivenFrom existed: keep the others
        try:
            handle = await start(without_redrive)
        except RPCError as err:
            if "search attribute" not in str(err).lower():
                raise
        else:
            log.warning("namespace %s has not registered the search attribute NoetlRedrivenFrom: redrive %s "
                        "starts without it (its memo names the old execution). Register it with "
                        "`noetl-temporal setup --namespace %s` (docs/deployment.md)", client.namespace,
                        execution_id, client.namespace)
            return handle
    # The namespace lacks our search attributes: the memo still names the playbook.
    log.warning("namespace %s has not registered the noetl search attributes: execution %s starts without "
                "them (its playbook is in the memo). Register them once with `noetl-temporal setup "
                "--namespace %s` (docs/deployment.md)", client.namespace, execution_id, client.namespace)
    return await start(plan.without_search_attributes())
