"""The sandbox conformance suite's bot (tests/sandbox/conformance.py): it does what it is told.

Each line it reads is a JSON object naming one command; it answers on stdout, one JSON line:

    {"echo": x}           {"echo": x}
    {"stderr": text}      writes text and a newline to stderr, then {"stderr": len(text)}
    {"exit": n}           exits with status n (no answer)
    {"signal": n}         kills itself with signal n (no answer)
    {"close_stdout": 1}   closes its stdout, says "closed" on stderr, and reads on
    {"fork": n}           starts n children and one setsid daemon, all sleeping; {"forked": n}
    {"hog": mib}          holds mib MiB, 8 at a time, touched; {"held": mib} if it got there

At the end of its stdin it exits with status 0. Standard library only: it runs on the
machine's python3, under bubblewrap and in the bot image alike.
"""

import json
import os
import sys
import time


def say(answer):
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()


def sleep_forever():
    while True:
        time.sleep(60)


def fork(n):
    for _ in range(n):
        if os.fork() == 0:
            sleep_forever()
    middle = os.fork()
    if middle == 0:
        os.setsid()  # out of the bot's process group and session: killpg misses it
        if os.fork() == 0:
            sleep_forever()
        os._exit(0)
    os.waitpid(middle, 0)


def hog(mib):
    held = [b"x" * (8 << 20) for _ in range(mib // 8)]
    return len(held) * 8


def main():
    for line in sys.stdin:
        command = json.loads(line)
        if "echo" in command:
            say({"echo": command["echo"]})
        elif "stderr" in command:
            sys.stderr.write(command["stderr"] + "\n")
            sys.stderr.flush()
            say({"stderr": len(command["stderr"])})
        elif "exit" in command:
            sys.stdout.flush()
            os._exit(command["exit"])
        elif "signal" in command:
            os.kill(os.getpid(), command["signal"])
            time.sleep(60)
        elif "close_stdout" in command:
            sys.stdout.flush()
            os.close(1)
            sys.stderr.write("closed\n")
            sys.stderr.flush()
        elif "fork" in command:
            fork(command["fork"])
            say({"forked": command["fork"]})
        elif "hog" in command:
            say({"held": hog(command["hog"])})
    os._exit(0)


main()
