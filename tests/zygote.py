"""A warm Python for the suite's stage processes: ``python -m osfl...`` without importing torch again each time.

About 200 stage processes run under the pipeline tests, and each spent ~3.5 s of CPU importing torch and numpy
(``-X importtime``: torch 3.57 s of the server stage's 4.16 s, on the 2-core AVX2 CI machine). This file is test
wiring only; nothing under ``src/`` knows about it, and no stage's code dependencies change.

* ``serve SOCKET``: import the heavy third-party libraries once (``PRELOAD``: never ``osfl``, whose files the
  tests may change), then for every connection fork a child that becomes the requested ``python -m MODULE ARGS``:
  the caller's stdin/stdout/stderr (passed as file descriptors), working directory and environment, ``sys.argv``
  and ``sys.path[0]`` as ``-m`` sets them, ``runpy`` to run the module as ``__main__``; its exit status goes back.
* ``shim(dir)`` writes ``dir/python``: with ``OSFL_ZYGOTE`` naming a live socket and a command line of the form
  ``python -m osfl.<...> ARGS``, it asks the server; any other command line (or an unset/empty ``OSFL_ZYGOTE``, or
  thread settings other than the server's) execs the real interpreter unchanged.

The outputs are the same bytes as a fresh process's (``tests/test_pipeline.py::
test_stages_pin_record_and_reproduce_bit_for_bit`` compares models a warm child wrote under ``dvc repro`` with
models of fresh processes). Torch is safe to fork here because the server never runs a torch operation, so no
intra-op thread pool exists when it forks; the thread settings are read when torch loads, hence the guard on them.
The server runs with the suite's environment, so the libraries that read theirs on import (matplotlib's MPL*
variables among them) start as a stage started by the suite would.
"""
from __future__ import annotations

import os
import sys

PRELOAD = ("torch", "torchvision", "numpy", "scipy", "sklearn", "pandas", "matplotlib.figure")
SERVED = "served.jsonl"  # beside the socket: one line per request

SHIM = '''#!{python} -S
# written by tests/zygote.py: `python -m osfl...` through the suite's warm server, anything else unchanged
import json, os, socket, struct, sys
REAL = {python!r}
THREADS = {threads!r}
def real():
    os.execv(REAL, [REAL] + sys.argv[1:])
path = os.environ.get("OSFL_ZYGOTE", "")
argv = sys.argv[1:]
if not path or len(argv) < 2 or argv[0] != "-m" or not argv[1].startswith("osfl.") \\
        or any(os.environ.get(k) != v for k, v in THREADS.items()):
    real()
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
except OSError:
    real()
msg = json.dumps({{"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}}).encode()
socket.send_fds(s, [struct.pack("!I", len(msg)) + msg], [0, 1, 2])
got = b""
while len(got) < 4:
    chunk = s.recv(4 - len(got))
    if not chunk:
        sys.stderr.write("tests/zygote.py: the warm server closed the connection without an exit status\\n")
        sys.exit(70)
    got += chunk
sys.exit(struct.unpack("!i", got)[0])
'''


def shim(folder: str, threads: dict[str, str]) -> str:
    """Write the ``python`` shim into ``folder`` (put it first on PATH); ``threads``: the thread variables the
    server was started with (a command with other values runs in a fresh interpreter). The path of the shim."""
    path = os.path.join(folder, "python")
    with open(path, "w") as f:
        f.write(SHIM.format(python=sys.executable, threads=threads))
    os.chmod(path, 0o755)
    return path


def served(folder: str) -> list[dict]:
    """The requests the server whose socket lies in ``folder`` ran (``argv``, ``cwd``), oldest first."""
    import json

    log = os.path.join(folder, SERVED)
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return [json.loads(line) for line in f if line.strip()]


def _recv_request(conn):
    import json
    import socket
    import struct

    data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    (n,) = struct.unpack("!I", data[:4])
    body = data[4:]
    while len(body) < n:
        chunk = conn.recv(n - len(body))
        if not chunk:
            raise EOFError("request cut short")
        body += chunk
    return json.loads(body), fds


def _become(request: dict, fds: list[int]) -> int:
    """In the forked child: take the caller's stdio, directory and environment, run the module; its exit code."""
    import runpy
    import traceback

    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    module, args = request["argv"][1], request["argv"][2:]
    sys.argv = [module] + args  # runpy replaces argv[0] with the module's file, as `-m` does
    sys.path[0] = os.getcwd()  # `-m` puts the working directory first
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:  # noqa: BLE001 - the child reports any failure as a fresh interpreter would
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    return code


def serve(path: str) -> None:
    import importlib
    import json
    import signal
    import socket
    import struct

    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    parent = os.getppid()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(64)
    server.settimeout(1.0)
    sys.stdout.flush()
    sys.stderr.flush()
    while True:
        try:
            conn, _ = server.accept()
        except socket.timeout:
            conn = None
        while True:  # reap finished helpers
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        if conn is None:
            if os.getppid() != parent:  # the test worker is gone
                return
            continue
        conn.settimeout(None)
        if os.fork() == 0:  # a helper per request: it forks the stage and reports the stage's exit status
            server.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            code = 70
            try:
                request, fds = _recv_request(conn)
                with open(os.path.join(os.path.dirname(path), SERVED), "a") as log:
                    log.write(json.dumps({"argv": request["argv"], "cwd": request["cwd"]}) + "\n")
                child = os.fork()
                if child == 0:
                    conn.close()
                    os._exit(_become(request, fds))
                for fd in fds:
                    os.close(fd)
                _, status = os.waitpid(child, 0)
                code = os.waitstatus_to_exitcode(status)
                code = 128 - code if code < 0 else code  # killed by a signal: as a shell reports it
            finally:
                try:
                    conn.sendall(struct.pack("!i", code))
                finally:
                    os._exit(0)
        conn.close()


if __name__ == "__main__":
    if sys.argv[1:2] != ["serve"] or len(sys.argv) != 3:
        sys.exit("usage: python tests/zygote.py serve SOCKET")
    serve(sys.argv[2])
