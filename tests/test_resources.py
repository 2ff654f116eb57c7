"""Resources and templates (mcpcore/resources.py): registration, resolution, contents."""

from __future__ import annotations

import base64

import pytest

from mcpcore import Server, UsageError
from mcpcore.errors import ResourceNotFound
from mcpcore.resources import ResourceRegistry, read_contents


def registry() -> ResourceRegistry:
    resources = ResourceRegistry()
    resources.add(lambda: "static", "file:///a.txt", template=False, name="a",
                  mime_type="text/plain")
    resources.add(lambda path: path, "file:///{path}", template=True, name="files")
    return resources


def test_exact_uris_win_over_templates() -> None:
    resources = registry()
    static, variables = resources.resolve("file:///a.txt")
    assert static.name == "a" and variables == {}
    template, variables = resources.resolve("file:///b.txt")
    assert template.name == "files" and variables == {"path": "b.txt"}


def test_a_uri_nobody_serves_is_resource_not_found() -> None:
    with pytest.raises(ResourceNotFound) as info:
        ResourceRegistry().resolve("file:///nothing")
    assert info.value.to_error()["data"] == {"uri": "file:///nothing"}


def test_contents_take_the_reader_value_shapes() -> None:
    resource, _ = registry().resolve("file:///a.txt")
    assert read_contents(resource, "file:///a.txt", "hi") == [
        {"uri": "file:///a.txt", "text": "hi", "mimeType": "text/plain"}]
    blob = read_contents(resource, "file:///a.txt", b"\x00\x01")[0]["blob"]
    assert base64.b64decode(blob) == b"\x00\x01"
    with pytest.raises(ResourceNotFound):
        read_contents(resource, "file:///a.txt", None)
    with pytest.raises(ResourceNotFound):
        read_contents(resource, "file:///a.txt", [])


def test_template_parameters_must_be_its_variables() -> None:
    with pytest.raises(UsageError, match=r"resource template 'file:///\{path\}'.*not variables"):
        ResourceRegistry().add(lambda other: other, "file:///{path}", template=True)


def test_duplicates_are_refused() -> None:
    resources = registry()
    with pytest.raises(ValueError, match="already registered"):
        resources.add(lambda: "x", "file:///a.txt", template=False)


def test_the_decorator_needs_the_uri_first() -> None:
    server = Server("res")
    with pytest.raises(UsageError, match=r'@server.resource needs the URI first'):
        server.resource(lambda: "x")  # type: ignore[arg-type]


def test_annotations_the_schema_forbids_are_refused() -> None:
    with pytest.raises(UsageError, match="resource 'file:///a' is not a valid Resource"):
        ResourceRegistry().add(lambda: "x", "file:///a", template=False,
                               annotations={"priority": "high"})
