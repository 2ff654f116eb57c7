"""The client's event-stream decoder on one long line: time against the line's length.

    python bench/bench_sse.py                       # this checkout's decoder
    python bench/bench_sse.py --decoder /tmp/old_sse.py --give-up 60

Feeds ``data: xxx…\\n\\n`` lines of 2, 4, 8 and 16 MiB to ``SseDecoder`` in chunks of
4 KiB and 64 KiB (what a socket read hands over; the client's pool reads 64 KiB), and
prints the CPU time of each (``time.process_time``). Linear decoding doubles with the
line; the decoder before issue 23 rescanned the unfinished line on every chunk, so its
time grew with the square. ``--decoder`` times another copy of ``sse.py``, e.g. one
taken from an older commit (``git show <commit>:mcpcore/client/sse.py > /tmp/old_sse.py``);
``--give-up`` stops a line after that many seconds. Numbers: docs/performance.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from types import ModuleType

MIB = 1024 * 1024


def load(path: str | None) -> ModuleType:
    if path is None:
        from mcpcore.client import sse

        return sse
    spec = importlib.util.spec_from_file_location("sse_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["sse_under_test"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--decoder", help="path of another sse.py to time")
    parser.add_argument("--give-up", type=float, default=120.0, metavar="SECONDS")
    args = parser.parse_args()
    sse = load(args.decoder)
    print(f"decoder: {args.decoder or 'mcpcore.client.sse'}")
    for chunk in (4096, 65536):
        for mib in (2, 4, 8, 16):
            stream = b"data: " + b"x" * (mib * MIB - 16) + b"\n\n"
            # Limits above the line, so that the old and new decoders both accept it.
            decoder = sse.SseDecoder(max_line_bytes=32 * MIB)
            if hasattr(sse, "MAX_EVENT_BYTES"):
                decoder = sse.SseDecoder(max_line_bytes=32 * MIB, max_event_bytes=32 * MIB)
            started = time.process_time()
            events = 0
            for i in range(0, len(stream), chunk):
                events += len(decoder.feed(stream[i : i + chunk]))
                if time.process_time() - started > args.give_up:
                    break
            spent = time.process_time() - started
            note = "" if events == 1 else f" (gave up after {args.give_up:.0f} s)"
            print(f"chunks of {chunk // 1024:>2} KiB, line of {mib:>2} MiB: {spent:8.3f} s{note}")


if __name__ == "__main__":
    main()
