"""``mcpcore gateway``: one stateless MCP endpoint over many MCP servers (docs/gateway.md).

The package's rooms (each imports only the rooms above it in this list, and the engine):

- ``config``: the gateway's configuration as data (``GatewayConfig``, ``UpstreamConfig``)
  and its TOML file, validated with every problem reported at once;
- ``errors``: the typed errors of an upstream that cannot answer (``UpstreamError``),
  answered with an error (``UpstreamRejected``), or for which the gateway holds no
  credential (``CredentialUnavailable``);
- ``watch``: what watches each upstream call (the ``CallWatcher`` protocol, bounded
  labels) and the audit event of a quarantine; ``metrics`` (prometheus_client) and
  ``tracing`` (OpenTelemetry): its two watchers, imported only when turned on;
- ``token_cache``: a fleet's second level for the callers' upstream tokens, sealed
  in the shared Store; ``upstream_dpop``: DPoP-bound upstream tokens (the key, the
  token requests, a proof per upstream request);
- ``credentials``: the gateway's own credential for each upstream (static, client
  credentials, token exchange, ID-JAG; DPoP-bound or not), set on every request to
  it; never the caller's token;
- ``upstreams``: one connection per upstream server (Streamable HTTP of either era, or a
  supervised stdio process), with its timeout, concurrency limit and circuit breaker;
- ``bridge``: an upstream's questions mid-call relayed to the caller in every pair of
  eras, its state sealed inside the gateway's, a 2025 upstream's call parked meanwhile;
- ``fanout``: a fleet's word between its instances, through the shared Store: a
  catalog change one instance sees, the others refresh for;
- ``handoff``: a parked call reached from any instance of a fleet through the shared
  Store (its answers to the owner, its next step back, the owner's liveness);
- ``catalog``: the federated tools, resources and prompts, their prefixed names and the
  owner of each name;
- ``pinning``: tool definitions pinned in a lock file (digest, lock, verdicts,
  approvals); ``quarantine``: a changed or new tool is held back until approved;
  ``pin_diff``: what changed, as a person reviews it; ``pins_cli``: ``pin``,
  ``approve`` and ``diff`` on the upstreams' tools as they are now;
- ``policy``: the rule file loaded into the engine's ``Policy``, gating every routed
  method, and each tool's category (the config's globs, else its annotations);
- ``updates``: resource updates: one upstream subscription per URI while any caller
  listens for it (bounded per upstream), each update passed to the engine's hub;
- ``search``: ``search_tools``, the gateway's own tool that finds catalog tools by
  words, paged with sealed cursors, under the lists' policy filter;
- ``tasks``: the tasks extension relayed: an upstream's task under a task id the
  gateway seals (upstream, its task id, tool, principal), ``tasks/*`` routed to the
  owner, task status watched for listen streams;
- ``app``: the engine ``Server`` the catalog is served through (every route, every era);
- ``serve`` (a shell): ``mcpcore gateway serve``, the gateway as a process;
- ``cli`` (a shell): ``mcpcore gateway check|serve|pin|approve|diff``.

This module imports none of them.
"""
