"""Handler signatures (mcpcore/signatures.py): schema, decoder, the one call."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from mcpcore import Context, UsageError
from mcpcore.meta import RequestMeta
from mcpcore.signatures import inspect_handler, invoke, schema_for, summary_of


def test_hints_become_a_schema_and_a_decoder() -> None:
    def f(name: str, count: int = 1, *, tags: list[str] | None = None) -> str:
        return name

    sig = inspect_handler(f, struct_name="f_args")
    assert sig.arg_names == ("name", "count", "tags")
    schema = schema_for(sig.args_type)
    assert schema["type"] == "object" and schema["required"] == ["name"]
    assert sig.decoder is not None
    decoded = sig.decoder.decode(b'{"name": "x", "count": 2}')
    assert msgspec.structs.asdict(decoded) == {"name": "x", "count": 2, "tags": None}


def test_no_arguments_means_no_struct_and_a_closed_schema() -> None:
    sig = inspect_handler(lambda: None, struct_name="none")
    assert sig.args_type is None and sig.decoder is None
    assert schema_for(None) == {"type": "object", "additionalProperties": False}


def test_an_unresolvable_hint_is_a_usage_error() -> None:
    def f(x: NotDefinedAnywhere) -> None:  # type: ignore[name-defined]  # noqa: F821
        return None

    with pytest.raises(UsageError, match="cannot resolve its type hints"):
        inspect_handler(f, struct_name="f", what="tool 'f'")


def test_not_a_function_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="expected a function"):
        inspect_handler(42, struct_name="x", what="tool 'x'")  # type: ignore[arg-type]


async def test_invoke_passes_the_context_and_awaits_async_handlers() -> None:
    ctx = Context(request_id=1, method="tools/call", meta=RequestMeta("2026-07-28", {}))

    async def a(ctx: Context, n: int) -> Any:
        return (ctx.request_id, n)

    def s(n: int) -> Any:
        return n * 2

    assert await invoke(a, inspect_handler(a, struct_name="a"), {"n": 3}, ctx) == (1, 3)
    assert await invoke(s, inspect_handler(s, struct_name="s"), {"n": 3}, ctx) == 6


def test_the_description_is_the_first_docstring_paragraph() -> None:
    def f() -> None:
        """First line
        continues here.

        Not this."""

    assert summary_of(f) == "First line continues here."
    assert summary_of(lambda: None) is None
