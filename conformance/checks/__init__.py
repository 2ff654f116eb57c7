"""The checks, one module per area. Importing this package registers every check.

Core (any server, black-box): ``discovery``, ``versions``, ``headers``, ``protocol``,
``http``, ``results``, ``tools``, ``lists``, ``resources``, ``prompts``, ``listen``,
``legacy``, ``security``, ``schema``, ``mrtr``. Packs switched on by flags: ``fixtures``
(``--fixtures official``), ``audit_auth`` (``--audit auth``), ``destructive``
(``--audit destructive``), ``fuzz`` (``--fuzz N``).
"""

from mcpcore.conformance.checks import (  # noqa: F401 - imported to register
    audit_auth,
    audit_state,
    destructive,
    discovery,
    fixtures,
    fuzz,
    headers,
    http,
    legacy,
    listen,
    lists,
    mrtr,
    prompts,
    protocol,
    resources,
    results,
    schema,
    security,
    tools,
    versions,
)
