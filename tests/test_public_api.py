"""``mcpcore.__all__`` lists exactly the public names of ``mcpcore`` (STYLE §6)."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import mcpcore


def test_all_lists_every_public_name() -> None:
    public = {name for name in dir(mcpcore) if not name.startswith("_")
              and name not in {"TYPE_CHECKING", "Any", "import_module"}
              and not isinstance(getattr(mcpcore, name), ModuleType)}
    assert public == set(mcpcore.__all__) - {"__version__"}


def _loaded_after(code: str) -> set[str]:
    watched = ("{'httpx', 'jsonschema', 'mcpcore.client', 'mcpcore.server', "
               "'mcpcore.transports', 'prometheus_client', 'opentelemetry', "
               "'mcpcore.metrics', 'mcpcore.tracing'}")
    done = subprocess.run(
        [sys.executable, "-c", f"import json, sys\n{code}\nprint(json.dumps(sorted("
                               f"m for m in sys.modules if m in {watched})))"],
        capture_output=True, text=True, check=True)
    loaded: set[str] = set(json.loads(done.stdout))
    return loaded


def test_each_side_loads_only_what_it_uses() -> None:
    """``import mcpcore`` loads nothing yet; a server author does not load the client or
    httpx; a client author does not load the server engine (or jsonschema)."""
    assert _loaded_after("import mcpcore") == set()
    assert _loaded_after("from mcpcore import Server, StreamableHTTP") == {
        "mcpcore.server", "mcpcore.transports"}
    assert _loaded_after("from mcpcore.client import Client") == {"httpx", "mcpcore.client"}
    assert "mcpcore.client" in _loaded_after("import mcpcore; mcpcore.Client")


def test_metrics_and_tracing_load_only_when_turned_on() -> None:
    """A server with a policy, health endpoints and the token-exchange client loads
    neither prometheus_client nor OpenTelemetry; turning each on loads it."""
    server = ("from mcpcore import Server, Policy, Ruleset\n"
              "from mcpcore.health import Operations\n"
              "import mcpcore.auth.server.downstream, mcpcore.logs\n"
              "Server('s', policy=Policy(Ruleset()))")
    assert _loaded_after(server) == {"mcpcore.server", "mcpcore.transports", "httpx"}
    assert {"prometheus_client", "mcpcore.metrics"} <= _loaded_after(
        "from mcpcore.metrics import Metrics")
    assert {"opentelemetry", "mcpcore.tracing"} <= _loaded_after(
        "from mcpcore.tracing import Tracing")


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        mcpcore.Nope  # noqa: B018


def test_every_name_in_all_resolves_and_is_unique() -> None:
    assert len(mcpcore.__all__) == len(set(mcpcore.__all__))
    for name in mcpcore.__all__:
        assert getattr(mcpcore, name) is not None, name


def test_public_names_come_from_their_home_modules() -> None:
    """Each exported class or function is the one its module defines (no copies)."""
    for name in mcpcore.__all__:
        value = getattr(mcpcore, name)
        home = getattr(value, "__module__", None)
        if isinstance(home, str) and home.startswith("mcpcore."):
            assert getattr(importlib.import_module(home), name) is value, name


def test_version_is_a_string() -> None:
    assert isinstance(mcpcore.__version__, str) and mcpcore.__version__


IMPORT = re.compile(r"^\s*from (mcpcore(?:\.[\w.]+)?) import \(?([\w, \n]+?)\)?$", re.M)
ROOT = Path(__file__).resolve().parents[1]
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]


@pytest.mark.parametrize("page", DOCS, ids=[p.name for p in DOCS])
def test_every_name_the_docs_import_exists(page: Path) -> None:
    for module, names in IMPORT.findall(page.read_text()):
        imported = importlib.import_module(module)
        for name in (n.strip().split(" as ")[0] for n in names.split(",")):
            if name:
                assert hasattr(imported, name), f"{page.name}: {module}.{name} does not exist"


def test_what_authors_need_comes_from_mcpcore() -> None:
    """The names the server docs use are exported from the package itself."""
    for name in ("LegacyShim", "MemoryStore", "RedisStore", "Store", "KeyRing", "Sealer",
                 "OriginGuard", "UsageError"):
        assert name in mcpcore.__all__, name
    for name in ("ParseError", "decide"):  # engine internals no author needs
        assert name not in mcpcore.__all__, name
