"""Gate on torch-abi-audit: the extension must use PyTorch's stable ABI only, and need no torch newer
than the oldest one the wheel supports.

    python scripts/torch_abi_gate.py TARGET [--min-torch 2.10.0]

TARGET is what torch-abi-audit takes: an import name (the installed package, e.g. ``sepconv1d``) or a
path to a package folder or a compiled library. Runs ``torch-abi-audit --check torch`` (its own
policy: no libtorch use outside the stable ABI) and then, from its JSON report, also requires that
every library references torch, that none has unstable or unknown shim symbols, and that the highest
minimum-torch floor among them is at most ``--min-torch``. Exits non-zero on any violation.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("+")[0].split(".")[:3])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target")
    parser.add_argument("--min-torch", default="2.10.0", help="the oldest torch the wheel supports")
    args = parser.parse_args(argv)

    exe = shutil.which("torch-abi-audit")
    if exe is None:
        print(
            "error: torch-abi-audit is not installed (pip install torch-abi-audit; needs Python >= 3.11)",
            file=sys.stderr,
        )
        return 2

    # 1. The tool's own table and policy gate, shown verbatim.
    check = subprocess.run([exe, "-v", "--check", "torch", args.target], check=False)
    # 2. The stricter checks, from the JSON report.
    proc = subprocess.run([exe, "--json", args.target], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(proc.stdout + proc.stderr, file=sys.stderr)
        print(f"error: torch-abi-audit --json {args.target} exited {proc.returncode}", file=sys.stderr)
        return 1
    report = json.loads(proc.stdout)
    if report.get("error"):
        print(f"error: torch-abi-audit: {report['error']}", file=sys.stderr)
        return 1

    libs = list(report.get("extensions", [])) + list(report.get("bundled_libs", []))
    problems: list[str] = []
    if not libs:
        problems.append("no compiled library found")
    floors: list[str] = []
    for lib in libs:
        name = lib["path"].rsplit("/", 1)[-1]
        torch_info = lib.get("torch") or {}
        if lib.get("error"):
            problems.append(f"{name}: {lib['error']}")
        if not torch_info.get("uses_torch"):
            problems.append(f"{name}: references no torch symbol (was it built against torch?)")
            continue
        if not torch_info.get("stable"):
            problems.append(f"{name}: not stable-ABI only")
        if torch_info.get("unstable_symbols"):
            shown = ", ".join(torch_info["unstable_symbols"][:10])
            problems.append(f"{name}: {len(torch_info['unstable_symbols'])} unstable symbols: {shown}")
        if torch_info.get("unknown_shim_symbols"):
            problems.append(
                f"{name}: shim symbols unknown to torch-abi-audit: "
                + ", ".join(torch_info["unknown_shim_symbols"][:10])
            )
        floor = torch_info.get("min_torch_version")
        if floor:
            floors.append(floor)
            if _version(floor) > _version(args.min_torch):
                needs = ", ".join(torch_info.get("version_defining_symbols") or []) or "see -v output"
                problems.append(
                    f"{name}: needs torch >= {floor}, newer than the supported {args.min_torch} ({needs})"
                )

    if check.returncode != 0:
        problems.append(f"torch-abi-audit --check torch exited {check.returncode}")
    highest = max(floors, key=_version) if floors else "n/a"
    if problems:
        for problem in problems:
            print(f"torch ABI gate: FAIL: {problem}", file=sys.stderr)
        return 1
    print(
        f"torch ABI gate: OK: {len(libs)} librar{'y' if len(libs) == 1 else 'ies'}, stable ABI only, "
        f"0 unstable symbols, needs torch >= {highest} (supported floor {args.min_torch})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
