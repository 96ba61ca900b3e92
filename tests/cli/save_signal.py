#!/usr/bin/env python3
"""Sends a signal to `xshard run ... --save DIR` while it writes DIR (for reliability_io.test).

Usage: save_signal.py XSHARD SIGNAL DIR ARGS...
Starts `XSHARD ARGS...` (ARGS include `--save DIR`), waits until a temporary file appears in DIR
(the first output is being written), sends SIGNAL (INT or TERM) and prints the exit code, the
files left in DIR and the process's stderr. A file left there must be complete: each is checked
against the size its .npy header announces.
"""
import os
import signal
import struct
import subprocess
import sys
import time


def npy_complete(path):
    """Whether the .npy file holds exactly the data bytes its header announces."""
    with open(path, "rb") as f:
        head = f.read(12)
        if head[:6] != b"\x93NUMPY":
            return False
        if head[6] == 1:
            hlen, start = struct.unpack("<H", head[8:10])[0], 10
        else:
            hlen, start = struct.unpack("<I", head[8:12])[0], 12
        f.seek(start)
        header = f.read(hlen).decode("latin1")
    shape = eval(header)["shape"]  # the test's own file: a dict literal numpy wrote
    descr = eval(header)["descr"]
    count = 1
    for d in shape:
        count *= d
    return os.path.getsize(path) == start + hlen + count * int(descr[2:])


def main():
    xshard, sig, out_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    p = subprocess.Popen([xshard] + sys.argv[4:], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and p.poll() is None:
        if os.path.isdir(out_dir) and any(".tmp." in n for n in os.listdir(out_dir)):
            break
        time.sleep(0.001)
    else:
        p.kill()
        print("no temporary file appeared before the command ended")
        return 1
    p.send_signal(signal.SIGINT if sig == "INT" else signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    print(f"exit {p.returncode}")
    left = sorted(os.listdir(out_dir))
    print(f"files left: {left}")
    for name in left:
        if not npy_complete(os.path.join(out_dir, name)):
            print(f"{name} is incomplete")
    sys.stdout.write(err)
    return 0


if __name__ == "__main__":
    sys.exit(main())
