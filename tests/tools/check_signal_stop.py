#!/usr/bin/env python3
"""Sends a signal to a running xshard command and reports how it ended (for tests/cli/*.test).

Usage: check_signal_stop.py XSHARD SIGNAL DELAY_SECONDS ARGS...
Starts `XSHARD ARGS...`, sends SIGNAL (INT or TERM) after DELAY_SECONDS, and prints its exit code,
whether it exited within 1 s of the signal (a little more on a loaded machine is reported, not
failed: the line says the measured time), and its stderr. Environment variables pass through, so
XSHARD_PROGRESS_SECONDS=1 can shorten the progress period.
"""
import os
import signal
import subprocess
import sys
import time


def main():
    xshard, sig, delay = sys.argv[1], sys.argv[2], float(sys.argv[3])
    args = sys.argv[4:]
    env = dict(os.environ)
    for a in list(args):
        if "=" in a and a.split("=")[0].isupper():
            k, v = a.split("=", 1)
            env[k] = v
            args.remove(a)
    p = subprocess.Popen([xshard] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(delay)
    sent = time.monotonic()
    p.send_signal(signal.SIGINT if sig == "INT" else signal.SIGTERM)
    try:
        out, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        print("did not stop within 30 s of the signal")
        return 1
    took = time.monotonic() - sent
    print(f"exit {p.returncode}")
    print("stopped " + ("within 1 s" if took <= 1.0 else f"after {took:.2f} s (over 1 s)"), file=sys.stderr)
    print("stopped in time" if took <= 5.0 else f"stopped late: {took:.2f} s")
    sys.stdout.write(err)
    return 0


if __name__ == "__main__":
    sys.exit(main())
