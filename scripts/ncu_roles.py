"""Attribute an Nsight Compute stall-sample profile of the warp-specialised separable forward
(csrc/cuda/separable_fwd_ws.cuh) to its roles: set-up, the loader warpgroup (W, and x where the
kernel has the x loader), the depthwise producers and the consumers. Each SASS instruction is
mapped to its chain of inlined source lines (nvdisasm -gi), and its role is the branch of the
kernel's body that the outermost line of that chain sits in. Prints each role's share of the
samples with its main stall reasons, then the source lines with the most samples.
Not part of the package or of CI.

    # on the GPU machine: a report with source counters of one launch, as CSV per instruction
    ncu --section SourceCounters --section WarpStateStats -k regex:sep_fwd_ws --launch-skip 20 \\
        --launch-count 1 -f -o rep ./harness            # or NCU_SOURCE=1 scripts/ncu_profile.sh
    ncu -i rep.ncu-rep --page source --csv --print-source sass > sass.csv
    # anywhere: the same binary's SASS with line information
    cuobjdump -xelf all ./harness                       # or sepconv1d/_C*.so
    nvdisasm -gi -c <the sm_90a .cubin> > k.sass
    python scripts/ncu_roles.py k.sass sass.csv MANGLED_NAME_SUBSTRING [TOP] [KERNEL_SOURCE]

MANGLED_NAME_SUBSTRING picks the kernel in k.sass (e.g. Li128ELb0ELi0ELi2ELb1ELb1ELb1E for the
seed's BN 128, two-chunk-step, x-loader, run-epilogue kernel). KERNEL_SOURCE defaults to
csrc/cuda/separable_fwd_ws.cuh and must be the version the binary was built from; the role
boundaries are its section comments ("// ---- W loader", "// ---- depthwise producer",
"// ---- consumers") and the x loader's branch ("kXLoader && lt ==").
"""
import collections
import csv
import os
import re
import sys

_LINE = re.compile(r'\s*//## File "([^"]+)", line (\d+)(.*)')
_INLINED = re.compile(r'inlined at "([^"]+)", line (\d+)')
_INSTR = re.compile(r"\s*/\*([0-9a-f]+)\*/\s+(.*?)\s*;")


def inline_chains(sass_lines, function):
    """{address: ([(file, line), ...] innermost first, instruction text)} of the first function
    whose mangled name contains `function`."""
    names = [ln[len(".text."):-1] for ln in sass_lines if ln.startswith(".text.") and ln.endswith(":")]
    match = [n for n in names if function in n]
    if not match:
        sys.exit(f"no function containing {function!r}; kernels: " + ", ".join(names))
    start = sass_lines.index(".text." + match[0] + ":")
    out, chain, in_block = {}, [], False
    for ln in sass_lines[start + 1:]:
        if ln.startswith(".text.") or ln.startswith("//-----"):
            break
        m = _LINE.match(ln)
        if m:  # a block of these lines precedes each change of source position: innermost first
            if not in_block:
                chain, in_block = [(os.path.basename(m.group(1)), int(m.group(2)))], True
            chain += [(os.path.basename(f), int(n)) for f, n in _INLINED.findall(m.group(3))]
            continue
        m = _INSTR.match(ln)
        if m:
            in_block = False
            out[int(m.group(1), 16)] = (list(chain), m.group(2))
    return match[0], out


def role_bounds(source):
    """[(first line, role)] from the kernel source's section comments, in line order."""
    marks = [("// ---- W loader", "W loader"), ("kXLoader && lt ==", "x loader"),
             ("// ---- depthwise producer", "producers"), ("// ---- consumers", "consumers")]
    bounds = [(0, "set-up")]
    with open(source) as f:
        for n, text in enumerate(f, 1):
            for key, role in marks:
                if key in text and role not in (r for _, r in bounds):
                    bounds.append((n, role))
    return sorted(bounds)


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    sass_path, csv_path, function = argv[1:4]
    top = int(argv[4]) if len(argv) > 4 else 30
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    source = argv[5] if len(argv) > 5 else os.path.join(root, "csrc", "cuda", "separable_fwd_ws.cuh")
    kernel_file = os.path.basename(source)
    with open(sass_path) as f:
        name, chains = inline_chains(f.read().split("\n"), function)
    bounds = role_bounds(source)

    def role_of(chain):
        outer = [n for f, n in chain if f == kernel_file]
        line = outer[-1] if outer else 0
        return [r for first, r in bounds if first <= line][-1]

    with open(csv_path) as f:
        rows = list(csv.reader(f))
    header = next(r for r in rows if "Address" in r)
    body = rows[rows.index(header) + 1:]
    col_addr = header.index("Address")
    col_samples = header.index("Warp Stall Sampling (All Samples)")
    stall_cols = [i for i, h in enumerate(header) if h.startswith("stall_") and "Not Issued" not in h]
    base = None
    total = 0.0
    by_role = collections.Counter()
    reasons = collections.defaultdict(collections.Counter)
    by_line = collections.Counter()
    for r in body:
        try:
            addr, samples = int(r[col_addr], 16), float(r[col_samples] or 0)
        except (ValueError, IndexError):
            continue
        base = addr if base is None else base  # the report's addresses are absolute
        chain, _ = chains.get(addr - base, ([], ""))
        role = role_of(chain)
        total += samples
        by_role[role] += samples
        for i in stall_cols:
            reasons[role][header[i][len("stall_"):]] += float(r[i] or 0)
        where = " <- ".join(f"{f}:{n}" for f, n in chain[:4]) or "?"
        by_line[(role, where)] += samples
    if not total:
        sys.exit("no samples: is the CSV the report's SASS source page of this kernel?")
    print(f"{name}: {total:.0f} samples")
    for role, s in by_role.most_common():
        top_reasons = ", ".join(f"{k} {v / s:.0%}" for k, v in reasons[role].most_common(5) if v)
        print(f"  {role:10s} {s / total:6.1%}  {top_reasons}")
    print()
    for (role, where), s in by_line.most_common(top):
        print(f"{s / total:6.2%}  {role:10s} {where}")


if __name__ == "__main__":
    main(sys.argv)
