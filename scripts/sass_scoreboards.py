"""Print a kernel's SASS with each instruction's scheduling control bits decoded: stall cycles, the
scoreboard it sets for its result (write) or for reading its sources (read), and the scoreboards
it waits on. A wait on a load's scoreboard placed before a loop's tensor-core products is a stall
the source does not show (csrc/NOTES.md, thirtieth session: the separable forward waited for its
bias load before every Cout pass). Not part of the package or of CI.

    cuobjdump -sass BINARY > k.sass
    python scripts/sass_scoreboards.py k.sass [FUNCTION_SUBSTRING] [FROM_HEX TO_HEX]

The control bits are the top bits of the second 64-bit word cuobjdump prints under each
instruction (sm_70 and later): bits 41-44 stall, 45 yield, 46-48 write scoreboard, 49-51 read
scoreboard (7 = none), 52-57 the wait mask (bit k: wait for scoreboard k).
"""
import re
import sys

_INSTR = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s*(.*?);\s*/\* (0x[0-9a-f]+) \*/")
_CONTROL = re.compile(r"\s*/\* (0x[0-9a-f]+) \*/")


def decode(lines, function="", lo=0, hi=1 << 40):
    """(address, stall, write sb, read sb, wait mask, text) of the instructions in [lo, hi] of the
    first function whose name contains `function`."""
    inside = False
    i = 0
    while i < len(lines) - 1:
        line = lines[i]
        if "Function :" in line:
            if inside:
                return
            inside = function in line
        m = _INSTR.match(line) if inside else None
        if m is None:
            i += 1
            continue
        c = _CONTROL.match(lines[i + 1])
        bits = int(c.group(1), 16) >> 41 if c else 0
        addr = int(m.group(1), 16)
        if lo <= addr <= hi:
            yield addr, bits & 15, (bits >> 5) & 7, (bits >> 8) & 7, (bits >> 11) & 63, m.group(2)
        i += 2


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    function = argv[2] if len(argv) > 2 else ""
    lo, hi = (int(argv[3], 16), int(argv[4], 16)) if len(argv) > 4 else (0, 1 << 40)
    with open(argv[1]) as f:
        lines = f.read().split("\n")
    for addr, stall, wsb, rsb, wait, text in decode(lines, function, lo, hi):
        w = f"w{wsb}" if wsb != 7 else "  "
        r = f"r{rsb}" if rsb != 7 else "  "
        waits = ",".join(str(k) for k in range(6) if wait >> k & 1) or "-"
        print(f"{addr:05x}  stall {stall:2d}  {w} {r}  wait {waits:<11s} {text}")


if __name__ == "__main__":
    main(sys.argv)
