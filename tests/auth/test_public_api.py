"""``mcpcore.auth.__all__`` and ``mcpcore.auth.issuer.__all__`` list exactly the public
names of each, each resolves to the one its module defines, and both load on first use."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
from types import ModuleType

import pytest

import mcpcore.auth as auth
import mcpcore.auth.issuer as issuer

PACKAGES = [auth, issuer]
#: What a lazy ``__init__`` holds besides its exports.
MACHINERY = {"TYPE_CHECKING", "Any", "import_module", "find_spec", "MissingExtra"}


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.__name__)
def test_all_lists_every_public_name(package: ModuleType) -> None:
    public = {name for name in dir(package) if not name.startswith("_")
              and name not in MACHINERY
              and not isinstance(getattr(package, name), ModuleType)}
    assert public == set(package.__all__)


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.__name__)
def test_all_is_sorted_and_unique(package: ModuleType) -> None:
    assert len(package.__all__) == len(set(package.__all__))
    assert list(package.__all__) == sorted(package.__all__, key=lambda n: (n[0].islower(), n))


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.__name__)
def test_public_names_come_from_their_home_modules(package: ModuleType) -> None:
    for name in package.__all__:
        value = getattr(package, name)
        home = getattr(value, "__module__", None)
        if isinstance(home, str) and home.startswith("mcpcore."):
            assert getattr(importlib.import_module(home), name) is value, name


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.__name__)
def test_no_export_is_named_like_a_module_of_its_package(package: ModuleType) -> None:
    """Importing a submodule sets the package's attribute of that name: with lazy exports,
    an export named like a module (``redact`` beside ``redact.py``) would turn into the
    module once anything imported it."""
    modules = {info.name for info in pkgutil.iter_modules(package.__path__)}
    assert not modules & set(package.__all__)


def test_the_issuer_names_are_not_exported_by_mcpcore_auth() -> None:
    """``mcpcore.auth`` is the resource server's and the client's API; the authorization
    server's names (its ``RegisteredClient`` record among them) are
    ``mcpcore.auth.issuer``'s, and asking ``mcpcore.auth`` for one says where it lives."""
    assert not set(auth.__all__) & set(issuer.__all__)
    assert len(issuer.__all__) == 16
    with pytest.raises(AttributeError, match=r"import it from mcpcore\.auth\.issuer"):
        auth.LocalAuthorizationServer  # noqa: B018
    with pytest.raises(AttributeError, match=r"now mcpcore\.auth\.issuer\.RegisteredClient"):
        auth.Client  # noqa: B018
    assert not hasattr(issuer, "Client")
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        auth.Nope  # noqa: B018


def test_the_names_mcpcore_auth_redirects_are_the_issuers() -> None:
    """``mcpcore.auth`` keeps its own list of the issuer's names (importing the issuer
    would need its extra): the two may not drift apart."""
    assert set(issuer.__all__) == auth._ISSUER_NAMES


def _loaded_after(code: str, *, hide: tuple[str, ...] = ()) -> tuple[set[str], str]:
    """The auth rooms and issuer libraries loaded after ``code``, and its stderr; ``hide``
    makes those top-level modules unimportable (as in an install without the extra)."""
    watched = ("starlette", "authlib", "joserfc", "mcpcore.auth.issuer",
               "mcpcore.auth.client.grants", "mcpcore.auth.server.resource_server")
    prelude = "".join(f"sys.modules[{name!r}] = None\n" for name in hide)
    done = subprocess.run(
        [sys.executable, "-c", f"import json, sys\n{prelude}{code}\n"
         f"print(json.dumps(sorted(m for m, v in sys.modules.items()"
         f" if v is not None and m in {watched!r})))"],
        capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        return set(), done.stderr
    return set(json.loads(done.stdout)), done.stderr


def test_mcpcore_auth_loads_nothing_until_a_name_is_used() -> None:
    assert _loaded_after("import mcpcore.auth")[0] == set()
    assert _loaded_after("from mcpcore.auth import BearerAuthMiddleware")[0] == {
        "mcpcore.auth.server.resource_server"}
    assert _loaded_after("from mcpcore.auth import OAuth, AuthorizationCodeGrant")[0] == {
        "mcpcore.auth.client.grants"}


def test_the_resource_server_and_client_work_without_the_issuer_extra() -> None:
    """Without starlette, authlib and joserfc (``pip install mcpcore``, no extras), the
    resource server and the OAuth client import, and build an authorization URL."""
    code = ("from mcpcore.auth import *\n"
            "from mcpcore.auth.client.code_flow import PendingAuthorization\n"
            "p = PendingAuthorization.start(issuer='https://as', iss_parameter_supported=True,"
            " client_id='c', redirect_uri='http://127.0.0.1/cb', resource='https://mcp',"
            " scopes=['a'])\n"
            "assert p.url('https://as/authorize').startswith('https://as/authorize?')")
    loaded, stderr = _loaded_after(code, hide=("starlette", "authlib", "joserfc"))
    assert stderr == ""
    assert loaded == {"mcpcore.auth.client.grants", "mcpcore.auth.server.resource_server"}


def test_the_issuer_without_its_extra_names_the_extra() -> None:
    _, stderr = _loaded_after("import mcpcore.auth.issuer.idjag", hide=("authlib",))
    assert stderr.strip().splitlines()[-1] == (
        "mcpcore.errors.MissingExtra: mcpcore.auth.issuer (the authorization server and "
        "test IdP) needs the 'issuer' extra (missing: authlib): "
        "pip install 'mcpcore[issuer]'")
