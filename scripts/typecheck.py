"""``make typecheck``: mypy (``[tool.mypy]``: ``strict``) over the package as it installs.

The package is made of three folders of the checkout (pyproject.toml,
``[tool.setuptools]``): ``mcpcore/``, and ``auth/`` and ``conformance/`` installed as
``mcpcore.auth`` and ``mcpcore.conformance``. mypy names a module after the folders it
sits in, and it does not run the import hook by which an editable install
(``pip install -e .``, setuptools' "Development Mode" guide) maps those folders
(python/mypy#13392): ``mypy auth`` would check ``auth/jwks.py`` as ``auth.jwks``, and
``import mcpcore.auth`` would not resolve.

So this script gives mypy each module of the wheel under the name it is installed as
(``mypy.modulefinder.BuildSource(path, module)``, the form mypyc, which ships with mypy,
builds with), from the ``packages`` and ``package-dir`` setuptools reads
(scripts/package_layout.py), and otherwise runs mypy as its command line does: the
options of ``[tool.mypy]``, and the arguments given here (options only, as
``--option=value``; the files are always the whole package)::

    .venv/bin/python scripts/typecheck.py
    .venv/bin/python scripts/typecheck.py --no-incremental

The exit status is mypy's: 0 clean, 1 type errors, 2 a blocking error or bad arguments.
"""

from __future__ import annotations

import os
import sys

from package_layout import ROOT, package_modules


def main(argv: list[str]) -> int:
    from mypy import build
    from mypy.errors import CompileError
    from mypy.main import process_options
    from mypy.modulefinder import BuildSource

    if any(not arg.startswith("-") for arg in argv):
        print("scripts/typecheck.py: pass mypy options only (--flag or --option=value); it "
              "always checks the whole package (mcpcore/, auth/, conformance/)",
              file=sys.stderr)
        return 2
    os.chdir(ROOT)  # [tool.mypy] and the relative paths below are the checkout's
    sys.setrecursionlimit(2**14)  # as mypy's command line does
    modules = package_modules()
    # The files are given too, so mypy validates the arguments as for a plain run.
    _, options = process_options([*argv, *map(str, modules.values())])
    sources = [BuildSource(str(path), name, base_dir=str(ROOT))
               for name, path in modules.items()]
    try:
        result = build.build(sources, options)
        messages, blocking = result.errors, False
    except CompileError as error:
        messages, blocking = error.messages, True
    for line in messages:
        print(line)
    errors = [m for m in messages if ": error:" in m]
    if blocking:
        return 2
    if errors:
        files = {m.split(":", 1)[0] for m in errors}
        print(f"Found {len(errors)} error{'s' * (len(errors) != 1)} in {len(files)} "
              f"file{'s' * (len(files) != 1)} (checked {len(sources)} source files)")
        return 1
    print(f"Success: no issues found in {len(sources)} source files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
