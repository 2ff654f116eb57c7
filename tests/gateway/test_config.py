"""The gateway's configuration file: what loads, what is refused (every problem at once,
each with its line and a "did you mean"), literal secrets and token passthrough refused,
and the secrets it names read from the environment and files."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from mcpcore.gateway.config import (
    MAX_BYTES,
    Credentials,
    Filters,
    GatewayConfig,
    GatewayConfigError,
    SecretRef,
    UpstreamConfig,
    load,
    loads,
    looks_secret,
    resolve_secrets,
)

ROOT = Path(__file__).resolve().parents[2]

GOOD = """\
[gateway]
name = "acme-gateway"
version = "1.2.3"
separator = "__"
refresh = "5m"
policy = "policy.toml"
pins = "gateway.lock"
admit_new_tools = true
search_tools = true

[gateway.aliases]
search = "notes__search"

[[upstream]]
name = "notes"
url = "http://127.0.0.1:8001/mcp"
era = "2026-07-28"
timeout = "1500ms"
max_concurrency = 8
breaker_failures = 3
breaker_reset = "1m"
tools.include = ["*"]
tools.exclude = ["admin_*"]
prompts = { include = ["daily"] }
categories = { "delete_*" = "destructive", "list_*" = "read" }

[upstream.credentials]
kind = "token_exchange"
token_endpoint = "https://as.example/token"
client_id = "gw"
client_secret_env = "NOTES_CLIENT_SECRET"
audience = "https://notes.example"
scopes = ["notes:read", "notes:write"]
dpop = true

[[upstream]]
name = "files"
prefix = "f"
command = "python"
args = ["-m", "examples.everything", "--stdio", "-v", "-v"]
env = { LOG_LEVEL = "info", MAX_TOKENS = "1000" }
env_from = { API_KEY = "FILES_API_KEY" }
cwd = "."

[[upstream]]
name = "vendor"
url = "https://vendor.example/mcp"
era = "legacy"

[upstream.credentials]
kind = "static"
header = "X-Api-Key"
scheme = ""
secret_file = "vendor.key"
"""


def good(tmp_path: Path) -> Path:
    (tmp_path / "policy.toml").write_text((ROOT / "examples" / "policy.toml").read_text())
    path = tmp_path / "gateway.toml"
    path.write_text(GOOD)
    return path


def test_a_good_file_reads_into_the_dataclasses(tmp_path: Path) -> None:
    config = load(good(tmp_path))
    notes, files, vendor = config.upstreams
    assert config == GatewayConfig(
        upstreams=config.upstreams, name="acme-gateway", version="1.2.3", separator="__",
        aliases={"search": "notes__search"}, refresh=300.0,
        policy=str(tmp_path / "policy.toml"), pins=str(tmp_path / "gateway.lock"),
        admit_new_tools=True, search_tools=True, source=str(tmp_path / "gateway.toml"))
    assert notes == UpstreamConfig(
        "notes", url="http://127.0.0.1:8001/mcp", era="2026-07-28", timeout=1.5,
        max_concurrency=8, breaker_failures=3, breaker_reset=60.0,
        tools=Filters(("*",), ("admin_*",)), prompts=Filters(("daily",)),
        categories={"delete_*": "destructive", "list_*": "read"},
        credentials=Credentials(
            "token_exchange", token_endpoint="https://as.example/token", client_id="gw",
            client_secret=SecretRef(env="NOTES_CLIENT_SECRET"),
            audience="https://notes.example", scopes=("notes:read", "notes:write"),
            dpop=True))
    assert files == UpstreamConfig(
        "files", prefix="f", command="python",
        args=("-m", "examples.everything", "--stdio", "-v", "-v"),
        env={"LOG_LEVEL": "info", "MAX_TOKENS": "1000"},
        env_from={"API_KEY": "FILES_API_KEY"}, cwd=str(tmp_path / "."))
    assert files.name_prefix == "f" and notes.name_prefix == "notes"
    assert vendor.credentials == Credentials(
        "static", header="x-api-key", scheme=None,
        secret=SecretRef(file=str(tmp_path / "vendor.key")))
    assert vendor.era == "legacy"


def test_the_defaults_are_the_dataclasses() -> None:
    config = loads('[[upstream]]\nname = "a"\nurl = "https://a.example/mcp"\n')
    assert config == GatewayConfig((UpstreamConfig("a", url="https://a.example/mcp"),))


def test_loads_leaves_relative_paths_alone_without_a_folder(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rules.toml").write_text("")
    config = loads('[gateway]\npolicy = "rules.toml"\n[[upstream]]\nname = "a"\n'
                   'command = "x"\n')
    assert config.policy == "rules.toml"


#: (the file, the line of the problem, what its message says). Each file has one
#: problem; every message names what to do.
BAD = [
    # unknown keys, with the key meant
    ('[gateway]\nnmae = "x"\n[[upstream]]\nname = "a"\ncommand = "x"\n', 2,
     "unknown key 'nmae' in [gateway] (did you mean 'name'?)"),
    ('[[upstream]]\nname = "a"\ncommand = "x"\ntimout = 3\n', 4,
     "unknown key 'timout' in upstream 'a' (did you mean 'timeout'?)"),
    ('[[upstream]]\nname = "a"\ncommand = "x"\ntools.inclde = ["*"]\n', 4,
     "unknown key 'inclde' in upstream 'a': tools (did you mean 'include'?)"),
    ('[gatway]\nname = "x"\n[[upstream]]\nname = "a"\ncommand = "x"\n', 1,
     "unknown key 'gatway' in the gateway configuration (did you mean 'gateway'?)"),
    ('[[upstream]]\nname = "a"\nurl = "https://a.example/"\n[upstream.credentials]\n'
     'kind = "client_credentials"\ntoken_endpoint = "https://as.example/t"\n'
     'client_id = "c"\nclient_secret_env = "S"\nscope = ["x"]\n', 9,
     "unknown key 'scope' in upstream 'a': credentials (did you mean 'scopes'?)"),
    # values, with the value meant
    ('[[upstream]]\nname = "a"\ncommand = "x"\nera = "2025-11-52"\n', 4,
     "not '2025-11-52' (did you mean '2025-11-25'?)"),
    ('[[upstream]]\nname = "a"\ncommand = "x"\ncategories = { "rm_*" = "destructve" }\n', 4,
     "not 'destructve' (did you mean 'destructive'?)"),
    ('[[upstream]]\nname = "a"\ncommand = "x"\n\n[upstream.credentials]\n'
     'kind = "token_exchang"\n', 6, "not 'token_exchang' (did you mean 'token_exchange'?)"),
    # the shape of the file
    ('[gateway]\nname = "x"\n', 0, "no upstream: add one [[upstream]] table"),
    ('[upstream]\nname = "a"\ncommand = "x"\n', 1, "write [[upstream]], not [upstream]"),
    ('[[upstream]]\nname = "a"\n', 1, "upstream 'a' needs url (a Streamable HTTP server) "
                                      "or command"),
    ('[[upstream]]\nname = "a"\nurl = "https://a.example/"\ncommand = "x"\n', 4,
     "has both url and command"),
    ('[[upstream]]\nurl = "https://a.example/"\n', 1, "upstream #1 needs a name"),
    ('[[upstream]]\nname = "a b"\ncommand = "x"\n', 2, "needs a name: 1 to 64 letters"),
    ('[[upstream]]\nname = "a"\ncommand = "x"\n[[upstream]]\nname = "a"\ncommand = "y"\n',
     5, "upstream name 'a' is already used by the upstream on line 1"),
    ('[[upstream]]\nname = "a"\ncommand = "x"\n[[upstream]]\nname = "b"\nprefix = "a"\n'
     'command = "y"\n', 6, "prefix 'a' is already upstream 'a''s (line 1)"),
    ('[[upstream]]\nname = "a__b"\ncommand = "x"\n', 2, "prefix 'a__b' holds the separator"),
    ('[[upstream]]\nname = "a_"\ncommand = "x"\n', 2, "(or ends with part of it)"),
    ('[gateway]\nprefixing = false\n[[upstream]]\nname = "a"\nprefix = "b"\ncommand = "x"\n',
     5, "prefix has no effect with gateway.prefixing = false"),
    ('[gateway]\nseparator = "::"\n[[upstream]]\nname = "a"\ncommand = "x"\n', 2,
     "gateway.separator must be 1 to 4 of '_', '-', '.'"),
    ('[[upstream]]\nname = "a"\nurl = "https://a.example/"\nargs = ["x"]\n', 4,
     "args is for a stdio upstream"),
    ('[[upstream]]\nname = "a"\ncommand = "x"\nallow_insecure_http = true\n', 4,
     "allow_insecure_http is for an upstream with a url"),
    ('[[upstream]]\nname = "a"\ncommand = "x"\nargs = "-v"\n', 4,
     "args must be a list of strings"),
    ('[[upstream]]\nname = "a"\ncommand = "x"\ncwd = "no/such/folder"\n', 4,
     "cwd: no folder at no/such/folder"),
    ('[[upstream]]\nname = "a"\ncommand = "x"\nenv = { "1X" = "y" }\n', 4,
     "'1X' is not a variable name"),
    ('[[upstream]]\nname = "a"\ncommand = "x"\nenv = { X = 3 }\n', 4,
     "env.X must be a string, not a number"),
    ('[[upstream]]\nname = "a"\ncommand = "x"\nenv_from = { X = "not a var" }\n', 4,
     "env_from.X must name a variable of the gateway's environment"),
    ('[[upstream]]\nname = "a"\ncommand = "x"\nenv = { X = "1" }\nenv_from = { X = "Y" }\n',
     5, "X is in both env and env_from"),
    # urls
    ('[[upstream]]\nname = "a"\nurl = "http://notes.internal/mcp"\n', 3,
     "use https (plain http is allowed to a loopback host), or set allow_insecure_http = "
     "true"),
    ('[[upstream]]\nname = "a"\nurl = "ftp://a.example/"\n', 3, "must be an http or https URL"),
    ('[[upstream]]\nname = "a"\nurl = "https://a.example/#x"\n', 3, "must not have a fragment"),
    ('[[upstream]]\nname = "a"\nurl = "https://a.example:99999/"\n', 3, "is not a URL"),
    # numbers and durations
    ('[[upstream]]\nname = "a"\ncommand = "x"\ntimeout = -1\n', 4,
     "timeout must be more than 0 and at most 86400 seconds"),
    ('[[upstream]]\nname = "a"\ncommand = "x"\ntimeout = "2 days"\n', 4,
     "like \"500ms\", \"30s\", \"5m\", \"1h\", not '2 days'"),
    ('[[upstream]]\nname = "a"\ncommand = "x"\nbreaker_reset = "25h"\n', 4,
     "at most 86400 seconds"),
    ('[[upstream]]\nname = "a"\ncommand = "x"\nmax_concurrency = 0\n', 4,
     "max_concurrency must be a whole number from 1 to 100000"),
    ('[[upstream]]\nname = "a"\ncommand = "x"\nbreaker_failures = true\n', 4,
     "breaker_failures must be a whole number"),
    ('[gateway]\nrefresh = "100ms"\n[[upstream]]\nname = "a"\ncommand = "x"\n', 2,
     "gateway.refresh must be at least 1 second"),
    ('[gateway]\nsearch_tools = "yes"\n[[upstream]]\nname = "a"\ncommand = "x"\n', 2,
     "gateway.search_tools must be true or false"),
    # filters and categories
    ('[[upstream]]\nname = "a"\ncommand = "x"\ntools.include = "*"\n', 4,
     "tools.include must be a list of non-empty strings"),
    ('[[upstream]]\nname = "a"\ncommand = "x"\ntools.include = ["a[b"]\n', 4,
     "has an unclosed '['"),
    ('[[upstream]]\nname = "a"\ncommand = "x"\nresources = ["*"]\n', 4,
     "resources (a table of include and exclude) must be a table"),
    # aliases
    ('[gateway]\naliases = { s = "notse__search" }\n[[upstream]]\nname = "notes"\n'
     'command = "x"\n', 2, "starts with no upstream's prefix and separator (did you mean "
                           "'notes'?)"),
    ('[gateway]\naliases = { notes__x = "notes__y" }\n[[upstream]]\nname = "notes"\n'
     'command = "x"\n', 2, "starts with upstream 'notes''s prefix"),
    ('[gateway]\naliases = { "a b" = "notes__y" }\n[[upstream]]\nname = "notes"\n'
     'command = "x"\n', 2, "alias 'a b' is not a tool name"),
    # paths
    ('[gateway]\npolicy = "no-such-rules.toml"\n[[upstream]]\nname = "a"\ncommand = "x"\n', 2,
     "gateway.policy: no rule file at"),
    ('[gateway]\npins = "no/such/folder/gateway.lock"\n[[upstream]]\nname = "a"\n'
     'command = "x"\n', 2, "gateway.pins: the folder of"),
    # credentials: each kind with what it needs
    ('[[upstream]]\nname = "a"\nurl = "https://a.example/"\n[upstream.credentials]\n'
     'token_endpoint = "https://as.example/t"\n', 4, "credentials needs a kind"),
    ('[[upstream]]\nname = "a"\nurl = "https://a.example/"\n[upstream.credentials]\n'
     'kind = "static"\n', 4, "kind 'static' needs secret_env or secret_file"),
    ('[[upstream]]\nname = "a"\nurl = "https://a.example/"\n[upstream.credentials]\n'
     'kind = "none"\nclient_id = "c"\n', 6, "kind 'none' does not use client_id"),
    ('[[upstream]]\nname = "a"\nurl = "https://a.example/"\n[upstream.credentials]\n'
     'kind = "id_jag"\ntoken_endpoint = "https://as.example/t"\n'
     'idp_token_endpoint = "https://idp.example/t"\nclient_id = "c"\n'
     'client_secret_file = "/run/secrets/c"\naudience = "https://as.example"\n', 4,
     "kind 'id_jag' needs resource"),
    ('[[upstream]]\nname = "a"\nurl = "https://a.example/"\n[upstream.credentials]\n'
     'kind = "client_credentials"\ntoken_endpoint = "http://as.example/t"\nclient_id = "c"\n'
     'client_secret_env = "S"\n', 6, "a token endpoint receives the gateway's client secret"),
    ('[[upstream]]\nname = "a"\nurl = "https://a.example/"\n[upstream.credentials]\n'
     'kind = "static"\nsecret_env = "S"\nsecret_file = "/s"\n', 7,
     "secret_env and secret_file both say where the secret is: keep one"),
    ('[[upstream]]\nname = "a"\nurl = "https://a.example/"\n[upstream.credentials]\n'
     'kind = "static"\nsecret_env = "$S"\n', 6, "must name an environment variable"),
    ('[[upstream]]\nname = "a"\nurl = "https://a.example/"\n[upstream.credentials]\n'
     'kind = "static"\nsecret_env = "S"\nheader = "Content-Length"\n', 7,
     "the gateway sets Content-Length itself"),
    ('[[upstream]]\nname = "a"\nurl = "https://a.example/"\n[upstream.credentials]\n'
     'kind = "static"\nsecret_env = "S"\nheader = "Mcp-Session-Id"\n', 7,
     "the gateway sets Mcp-Session-Id itself"),
    ('[[upstream]]\nname = "a"\nurl = "https://a.example/"\n[upstream.credentials]\n'
     'kind = "token_exchange"\ntoken_endpoint = "https://as.example/t"\nclient_id = "c"\n'
     'client_secret_env = "S"\nresource = "notes"\n', 9, "must be an absolute URI"),
    ('[[upstream]]\nname = "a"\nurl = "https://a.example/"\n[upstream.credentials]\n'
     'kind = "token_exchange"\ntoken_endpoint = "https://as.example/t"\nclient_id = "c"\n'
     'client_secret_env = "S"\naudience = "x"\nscopes = ["a b"]\n', 10, "one scope per string"),
]


@pytest.mark.parametrize(("text", "line", "message"), BAD,
                         ids=[f"{i}-{case[2][:40]}" for i, case in enumerate(BAD)])
def test_each_bad_file_is_refused_at_its_line(text: str, line: int, message: str) -> None:
    with pytest.raises(GatewayConfigError) as caught:
        loads(text, source="gw.toml")
    problems = caught.value.problems
    assert [p.line for p in problems] == [line], problems
    assert message in problems[0].message, problems[0].message
    assert str(caught.value) == (f"gw.toml:{line}: {problems[0].message}" if line
                                 else f"gw.toml: {problems[0].message}")


#: A literal secret anywhere in the file, and the form the message names instead.
LITERAL_SECRETS = [
    ('kind = "static"\nsecret = "hunter2"\n', 'secret_env = "VAR"'),
    ('kind = "static"\ntoken = "ghp_abc"\n', 'secret_env = "VAR"'),
    ('kind = "static"\npassword = "hunter2"\n', 'secret_file = "/path"'),
    ('kind = "client_credentials"\ntoken_endpoint = "https://as.example/t"\n'
     'client_id = "c"\nclient_secret = "s3cret"\n', 'client_secret_env = "VAR"'),
    ('kind = "token_exchange"\ntoken_endpoint = "https://as.example/t"\nclient_id = "c"\n'
     'audience = "https://a.example"\nclient_secret = "s3cret"\n',
     'client_secret_file = "/path"'),
]


@pytest.mark.parametrize(("credentials", "form"), LITERAL_SECRETS)
def test_a_literal_secret_in_credentials_is_refused_naming_the_variable_form(
        credentials: str, form: str) -> None:
    text = ('[[upstream]]\nname = "a"\nurl = "https://a.example/"\n'
            f"[upstream.credentials]\n{credentials}")
    with pytest.raises(GatewayConfigError) as caught:
        loads(text)
    (problem,) = caught.value.problems  # the literal only, not "needs ..._env" besides
    assert problem.line == text.count("\n")
    assert "a literal secret is refused" in problem.message and form in problem.message


@pytest.mark.parametrize(("lines", "line", "message"), [
    ('env = { GITHUB_TOKEN = "ghp_abc" }', 4,
     'env_from = { GITHUB_TOKEN = "GATEWAY_VAR" }'),
    ('env = { DB_PASSWORD = "x" }', 4, 'env_from = { DB_PASSWORD = "GATEWAY_VAR" }'),
    ('env = { UPSTREAM_AUTH = "Bearer abc" }', 4, "a literal secret is refused"),
    ('env = { OPENAI_API_KEY = "sk-x" }', 4, "a literal secret is refused"),
    ('args = ["--api-key", "abc"]', 4, "args pass a secret on the command line (--api-key"),
    ('args = ["--token=abc"]', 4, "args pass a secret on the command line (--token"),
    ('api_key = "abc"', 4, 'secret_env = "VAR"'),
])
def test_a_literal_secret_for_a_stdio_upstream_is_refused(lines: str, line: int,
                                                          message: str) -> None:
    with pytest.raises(GatewayConfigError) as caught:
        loads(f'[[upstream]]\nname = "a"\ncommand = "x"\n{lines}\n')
    (problem,) = caught.value.problems
    assert problem.line == line and message in problem.message, problem


@pytest.mark.parametrize("url", ["https://user:pw@a.example/mcp",
                                 "https://a.example/mcp?api_key=abc",
                                 "https://a.example/mcp?access_token=abc"])
def test_a_secret_in_an_upstream_url_is_refused(url: str) -> None:
    with pytest.raises(GatewayConfigError) as caught:
        loads(f'[[upstream]]\nname = "a"\nurl = "{url}"\n')
    (problem,) = caught.value.problems
    assert problem.line == 3 and "a literal secret is refused" in problem.message
    assert "abc" not in str(caught.value) and "pw" not in str(caught.value)


def test_names_that_only_look_like_secrets_are_not_refused() -> None:
    loads('[[upstream]]\nname = "a"\ncommand = "x"\n'
          'args = ["--max-tokens", "100", "-v", "--token-file", "/run/t"]\n'
          'env = { MAX_TOKENS = "100", PATH = "/bin", TOKENIZER = "bpe", '
          'TOKEN_URL = "https://as.example/token", SECRET_FILE = "/run/s" }\n')
    assert looks_secret("GITHUB_TOKEN") and looks_secret("api-key")
    assert looks_secret("client_secret") and looks_secret("PRIVATE_KEY")
    for name in ("max_tokens", "TOKENIZER", "TOKEN_URL", "SECRET_FILE", "token-file",
                 "client_id", "KEYBOARD"):
        assert not looks_secret(name), name


@pytest.mark.parametrize(("where", "line"), [
    ('[upstream.credentials]\nkind = "passthrough"', 5),
    ('[upstream.credentials]\nkind = "forward"', 5),
    ('[upstream.credentials]\nkind = "pass-through"', 5),
    ('[upstream.credentials]\nkind = "none"\nforward_token = true', 6),
    ('[upstream.credentials]\nkind = "none"\npassthrough = true', 6),
    ("forward_token = true", 4),
    ("token_passthrough = true", 4),
    ("forward_authorization = true", 4),
])
def test_token_passthrough_is_refused_with_what_to_use_instead(where: str,
                                                                line: int) -> None:
    with pytest.raises(GatewayConfigError) as caught:
        loads(f'[[upstream]]\nname = "a"\nurl = "https://a.example/"\n{where}\n')
    (problem,) = caught.value.problems
    assert problem.line == line
    for words in ("never forwarded", "Token Passthrough", 'kind = "token_exchange"',
                  'kind = "id_jag"', "docs/gateway-config.md"):
        assert words in problem.message


def test_plain_http_to_another_host_needs_the_named_switch() -> None:
    text = '[[upstream]]\nname = "a"\nurl = "http://10.0.0.5:8080/mcp"\n'
    with pytest.raises(GatewayConfigError, match="allow_insecure_http = true"):
        loads(text)
    config = loads(text + "allow_insecure_http = true\n")
    assert config.upstreams[0].allow_insecure_http
    for host in ("127.0.0.1", "localhost", "[::1]"):
        loads(f'[[upstream]]\nname = "a"\nurl = "http://{host}:8001/mcp"\n')


EVERYTHING_WRONG = """\
[gateway]
nmae = "x"
refresh = 0

[[upstream]]
name = "notes"
url = "http://notes.internal/mcp"
era = "modern"

[upstream.credentials]
kind = "token_exchange"
token_endpoint = "https://as.example/token"
client_id = "gw"
client_secret = "hunter2"
audience = "https://notes.example"

[[upstream]]
name = "notes"
command = "python"
env = { GITHUB_TOKEN = "ghp_abc" }
credentials = { kind = "passthrough" }
"""


def test_every_problem_is_reported_at_once_in_line_order() -> None:
    with pytest.raises(GatewayConfigError) as caught:
        loads(EVERYTHING_WRONG, source="gw.toml")
    lines = [p.line for p in caught.value.problems]
    assert lines == [2, 3, 7, 8, 14, 18, 20, 21], str(caught.value)
    assert "hunter2" not in str(caught.value) and "ghp_abc" not in str(caught.value)
    assert str(caught.value).count("\n") == len(lines) - 1
    assert all(line.startswith("gw.toml:") for line in str(caught.value).splitlines())


@pytest.mark.parametrize(("text", "line", "message"), [
    ('[[upstream]]\nname = "a"\ncommand = "x\n', 3, "invalid TOML"),
    ('[[upstream]]\nname = "a"\ncredentials = { kind = "static",\n  secret_env = "S" }\n', 3,
     "invalid TOML"),
    (b'[[upstream]]\nname = "\xff"\n', 2, "the file is not UTF-8"),
])
def test_a_file_that_is_not_toml_is_one_problem_with_its_line(text: str | bytes, line: int,
                                                              message: str) -> None:
    with pytest.raises(GatewayConfigError) as caught:
        loads(text)
    (problem,) = caught.value.problems
    assert problem.line == line and message in problem.message


def test_a_file_too_big_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "big.toml"
    path.write_bytes(b"# filler\n" * (MAX_BYTES // 9 + 1))
    with pytest.raises(GatewayConfigError, match=f"larger than {MAX_BYTES} bytes, the most "
                                                 "a gateway configuration may be"):
        load(path)
    with pytest.raises(GatewayConfigError, match="cannot read the file"):
        load(tmp_path / "missing.toml")


def test_too_many_upstreams_is_a_problem() -> None:
    text = "".join(f'[[upstream]]\nname = "u{i}"\ncommand = "x"\n' for i in range(257))
    with pytest.raises(GatewayConfigError, match="more than 256 upstreams"):
        loads(text)


# -- secrets --------------------------------------------------------------------------------
def _secret_config(tmp_path: Path) -> GatewayConfig:
    return loads(textwrap.dedent("""\
        [[upstream]]
        name = "notes"
        url = "https://notes.example/mcp"
        [upstream.credentials]
        kind = "client_credentials"
        token_endpoint = "https://as.example/token"
        client_id = "gw"
        client_secret_file = "client.secret"

        [[upstream]]
        name = "vendor"
        url = "https://vendor.example/mcp"
        [upstream.credentials]
        kind = "static"
        secret_env = "VENDOR_TOKEN"

        [[upstream]]
        name = "files"
        command = "python"
        env = { LOG_LEVEL = "info" }
        env_from = { API_KEY = "FILES_API_KEY" }
        """), source="gw.toml", base_dir=tmp_path)


def test_resolve_secrets_reads_variables_and_files(tmp_path: Path) -> None:
    (tmp_path / "client.secret").write_text("s3cret\n")
    config = _secret_config(tmp_path)
    secrets = resolve_secrets(config, {"VENDOR_TOKEN": "vt", "FILES_API_KEY": "fk"})
    notes, vendor, _ = config.upstreams
    assert notes.credentials.client_secret is not None and vendor.credentials.secret
    assert secrets.value(notes.credentials.client_secret) == "s3cret"
    assert secrets.value(vendor.credentials.secret) == "vt"
    assert secrets.child_env["files"] == {"LOG_LEVEL": "info", "API_KEY": "fk"}
    assert "s3cret" not in repr(secrets) and "fk" not in repr(secrets)


def test_every_missing_secret_is_named_at_once(tmp_path: Path) -> None:
    config = _secret_config(tmp_path)
    with pytest.raises(GatewayConfigError) as caught:
        resolve_secrets(config, {"FILES_API_KEY": ""})
    assert [p.message for p in caught.value.problems] == [
        f"upstream 'notes': credentials.client_secret_file: cannot read "
        f"{tmp_path / 'client.secret'}: No such file or directory",
        "upstream 'vendor': credentials.secret_env: $VENDOR_TOKEN is not set in the "
        "gateway's environment",
        "upstream 'files': env_from.API_KEY names $FILES_API_KEY, which is empty in the "
        "gateway's environment",
    ]
    assert str(caught.value).startswith("gw.toml: upstream 'notes'")


@pytest.mark.parametrize(("content", "message"), [
    (b"", "is empty"),
    (b"\n", "is empty"),
    (b"a\nb\n", "holds a line break"),
    (b"\xff\xfe", "is not UTF-8"),
    (b"x" * (64 * 1024 + 1), "is larger than 65536 bytes"),
])
def test_a_secret_file_that_is_no_secret_is_refused(tmp_path: Path, content: bytes,
                                                    message: str) -> None:
    (tmp_path / "client.secret").write_bytes(content)
    with pytest.raises(GatewayConfigError) as caught:
        resolve_secrets(_secret_config(tmp_path), {"VENDOR_TOKEN": "v", "FILES_API_KEY": "f"})
    (problem,) = caught.value.problems
    assert message in problem.message


def test_a_secret_variable_with_a_line_break_is_refused(tmp_path: Path) -> None:
    (tmp_path / "client.secret").write_text("s\r\n")
    with pytest.raises(GatewayConfigError, match="holds a line break") as caught:
        resolve_secrets(_secret_config(tmp_path),
                        {"VENDOR_TOKEN": "v\r\nX-Injected: 1", "FILES_API_KEY": "f"})
    assert "X-Injected" not in str(caught.value)


@pytest.mark.parametrize(("lines", "message"), [
    ('url = "https://a.example/mcp\\r\\nHost: evil.example"', "blanks or control characters"),
    ('url = "https://a.example/ mcp"', "blanks or control characters"),
    ('command = "x\\u0000y"', "command must not contain NUL"),
    ('command = "x"\nargs = ["a\\u0000b"]', "args must be a list of strings (without NUL)"),
    ('command = "x"\nenv = { A = "\\u0000" }', "env.A must not contain NUL"),
])
def test_control_characters_where_they_would_split_a_request_or_a_command(
        lines: str, message: str) -> None:
    with pytest.raises(GatewayConfigError, match=re.escape(message)):
        loads(f'[[upstream]]\nname = "a"\n{lines}\n')


def test_mutated_files_give_problems_never_a_crash() -> None:
    """Every one-character deletion, and a few insertions, of the good file: a config
    or a GatewayConfigError, nothing else (no traceback for the operator)."""
    text = GOOD.replace('policy = "policy.toml"\n', "").replace('cwd = "."\n', "")
    outcomes = {"loaded": 0, "refused": 0}
    for i in range(0, len(text), 3):
        for mutated in (text[:i] + text[i + 1:], text[:i] + '"' + text[i:],
                        text[:i] + "[" + text[i:], text[:i] + "7" + text[i:]):
            try:
                loads(mutated)
                outcomes["loaded"] += 1
            except GatewayConfigError as exc:
                assert exc.problems and all(p.message for p in exc.problems)
                outcomes["refused"] += 1
    assert outcomes["loaded"] > 50 and outcomes["refused"] > 500, outcomes


# -- the fleet's Store ---------------------------------------------------------------------
_ONE = '[[upstream]]\nname = "notes"\nurl = "http://127.0.0.1:8001/mcp"\n'


def test_the_store_url_is_read_from_the_environment_never_the_file() -> None:
    config = loads('[gateway]\nstore_url_env = "GW_REDIS"\n' + _ONE, source="gw.toml")
    assert config.store_url == SecretRef(env="GW_REDIS")
    secrets = resolve_secrets(config, {"GW_REDIS": "redis://:pw@10.0.0.5:6379/0"})
    assert secrets.value(config.store_url) == "redis://:pw@10.0.0.5:6379/0"
    with pytest.raises(GatewayConfigError) as caught:
        resolve_secrets(config, {})
    assert [p.message for p in caught.value.problems] == [
        "gateway.store_url_env: $GW_REDIS is not set in the gateway's environment"]
    with pytest.raises(GatewayConfigError) as literal:
        loads('[gateway]\nstore_url = "redis://:pw@10.0.0.5/0"\n' + _ONE, source="gw.toml")
    [problem] = literal.value.problems
    assert problem.line == 2 and "store_url_env" in problem.message
    assert "pw@" not in str(literal.value)


def test_a_gateway_with_a_store_url_serves_its_legacy_sessions_from_redis() -> None:
    from mcpcore.gateway.app import Gateway
    from mcpcore.stores.redis import RedisStore

    config = loads('[gateway]\nstore_url_env = "GW_REDIS"\n' + _ONE)
    gateway = Gateway(config, environ={"GW_REDIS": "redis://127.0.0.1:1/0"})
    assert isinstance(gateway.store, RedisStore)
    assert gateway.server.subscriptions.store is gateway.store
    plain = Gateway(loads(_ONE), environ={})
    assert plain.store is None
