"""Resources and templates (mcpcore/resources.py): registration, resolution, contents."""

from __future__ import annotations

import base64

import pytest

from mcpcore import Server, UsageError
from mcpcore.errors import ResourceNotFound, UnnormalizedUri
from mcpcore.resources import ResourceRegistry, read_contents
from mcpcore.uritemplates import UriTemplate


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


@pytest.mark.parametrize(("uri", "decoded"), [
    ("file:///%73ecret", "secret"),           # an unreserved character, encoded
    ("file:///%2E%2E%2Fsecret", "../secret"),
    ("file:///a%2F..%2Fsecret", "a/../secret"),  # a dot-segment once decoded
    ("file:///a%5C..%5Csecret", "a\\..\\secret"),
])
def test_a_uri_a_template_routes_must_be_in_normal_form(uri: str, decoded: str) -> None:
    # A policy glob sees the URI as written ("file:///secret" denied); the template's
    # reader got the decoded variable, another resource than the rule saw.
    resources = ResourceRegistry()
    resources.add(lambda name: name, "file:///{name}", template=True, name="files")
    assert UriTemplate.parse("file:///{name}").match(uri) == {"name": decoded}
    with pytest.raises(UnnormalizedUri) as info:
        resources.resolve(uri)
    assert info.value.code == -32602
    assert info.value.to_error()["data"] == {"uri": uri, "reason": "not_normalized"}
    # Normal forms are routed as before: a dot inside a name, an encoded reserved
    # character or space, a literal "..." segment.
    for fine in ("file:///a.b", "file:///a%2Fb", "file:///a%20b", "file:///...", "file:///.x"):
        assert resources.resolve(fine)[0].name == "files"


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
