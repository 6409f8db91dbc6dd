"""Feeds truncated and garbled copies of the DSL kernels to hisa-opt.

A malformed file must give a diagnostic and exit code 1, never a crash
(signal), a hang, or success without output. Usage:
    mangle_inputs.py HISA_OPT FILE...
"""

import random
import subprocess
import sys
import tempfile

GARBAGE = [b"", b"}", b"{", b"%", b"[", b"]", b"?", b"*", b"<", b">", b"0", b"-1",
           b"!tile.frag<[", b"tile.launch", b"\x00", b"\xff", b"\"", b"#tile."]


def run(hisa_opt, text, label):
    with tempfile.NamedTemporaryFile(suffix=".mlir") as f:
        f.write(text)
        f.flush()
        try:
            proc = subprocess.run([hisa_opt, f.name], capture_output=True, timeout=20)
        except subprocess.TimeoutExpired:
            print(f"HANG: {label}")
            return False
    if proc.returncode == 0:
        return True
    if proc.returncode != 1 or b"error" not in proc.stderr:
        print(f"CRASH: {label}: exit {proc.returncode}\n{proc.stderr.decode(errors='replace')[-2000:]}")
        return False
    return True


def main():
    hisa_opt, files = sys.argv[1], sys.argv[2:]
    rng = random.Random(20261129)
    runs = failures = 0
    for path in files:
        data = open(path, "rb").read()
        # Truncations at 40 points spread over the file.
        for i in range(1, 41):
            cut = len(data) * i // 41
            runs += 1
            failures += not run(hisa_opt, data[:cut], f"{path} truncated at {cut}")
        # Random token-level damage: delete, duplicate or insert garbage.
        for trial in range(40):
            mutated = bytearray(data)
            for _ in range(rng.randint(1, 4)):
                pos = rng.randrange(len(mutated))
                action = rng.randrange(3)
                if action == 0:
                    del mutated[pos:pos + rng.randint(1, 16)]
                elif action == 1:
                    mutated[pos:pos] = mutated[pos:pos + rng.randint(1, 16)]
                else:
                    mutated[pos:pos] = rng.choice(GARBAGE)
            runs += 1
            failures += not run(hisa_opt, bytes(mutated), f"{path} mutation #{trial}")
    print(f"{runs} malformed inputs, {failures} crashes")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
