"""Per-kernel instruction counts of a `cuobjdump -sass` listing (scripts/sass_loops.sh)."""
import collections
import re
import sys


def kernels(path):
    """{mangled name: [(address, opcode, operands)]} of the listing at path."""
    out, cur = {}, None
    for line in open(path):
        m = re.search(r"Function : (\S+)", line)
        if m:
            cur = out.setdefault(m.group(1), [])
            continue
        m = re.search(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)([^;]*);", line)
        if m and cur is not None:
            cur.append((int(m.group(1), 16), m.group(2), m.group(3)))
    return out


def row_loop(ins):
    """The instructions of the widest loop (a backward branch) that holds a barrier."""
    best = []
    for addr, op, args in ins:
        m = re.search(r"0x([0-9a-f]+)", args) if op.startswith("BRA") else None
        if m and int(m.group(1), 16) < addr:
            span = [i for i in ins if int(m.group(1), 16) <= i[0] <= addr]
            if any(i[1].startswith("BAR") for i in span) and len(span) > len(best):
                best = span
    return best


def main():
    path, patterns = sys.argv[1], sys.argv[2:]
    for name, ins in kernels(path).items():
        if not all(p in name for p in patterns):
            continue
        loop = row_loop(ins)
        ops = collections.Counter(i[1].split(".")[0] for i in loop or ins)
        common = " ".join(f"{k}:{v}" for k, v in ops.most_common(12))
        m = re.search(r"kernelI(.*?)EEEv", name)
        print(f"{(m.group(1) if m else name)[-40:]:40s} total {len(ins):5d} loop {len(loop):5d}  {common}")


if __name__ == "__main__":
    main()
