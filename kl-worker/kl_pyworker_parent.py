"""The warm parent of kl-pyworker (`kl-pyworker --zygote NAME IDLE_S`): a
process that imports numpy, torch and triton once (never touching CUDA: a
forked child must make its own context) and forks a worker for each client
that asks, so a command pays for a fork instead of the interpreter and
torch's import (seconds). It runs only this file's and kl-pyworker's code
and those libraries, never a case's or a candidate's: they are imported in
the children, each of which enters the sandbox its client prepared (the
wire text, the environment and the Landlock ruleset come with the request;
libkernlab/worker/zygote.c) before it serves as kl-pyworker's main() does.
It listens on an abstract Unix socket, which a sandboxed child cannot reach
(a network namespace of its own, or Landlock's scope), and answers only its
own user. A request is a 4-byte length, then the wire text and the
environment's entries, NUL-separated, with the worker's channel, its log and
the ruleset as SCM_RIGHTS; the answer is {"pid":N}, later {"status":S} (the
raw wait status) when the worker ends. It leaves after IDLE_S seconds with
no worker and no request.

kl-pyworker imports this file from its own folder for --zygote only; the
worker itself (main) and how it says what went wrong (why) are passed in."""
import ctypes
import importlib
import os
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

def _preload():
    """Import what candidates import, and do the work every worker's first
    Triton kernel would do that depends on no candidate, without
    initialising CUDA: Triton's own key (a hash of its installed files,
    0.6 s on the H200 machine; kept in memory) and its driver's helper
    module (built with the C compiler into this parent's own cache, 0.4 s,
    and loaded). A child inherits both; what it compiles for a kernel (the
    kernel, its launcher) goes to its own cache, never this one."""
    for name in ("numpy", "torch", "triton", "triton.language",
                 "triton.compiler.compiler", "triton.runtime.build",
                 "triton.backends.nvidia.compiler",
                 "triton.backends.nvidia.driver"):
        try:
            importlib.import_module(name)
        except Exception:
            pass
    for where, what in (("triton.runtime.cache", "triton_key"),
                        ("triton.compiler.compiler", "triton_key"),
                        ("triton.backends.nvidia.driver", "CudaUtils")):
        try:
            getattr(sys.modules[where], what)()
        except Exception:
            pass  # another Triton, or none
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        raise SystemExit("kl-pyworker: CUDA was initialised before the fork")


def _received(conn):
    """(wire, environment, [channel, log, ruleset?]) of one request."""
    import socket
    data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 4)
    if len(data) < 4:
        raise ValueError("short request")
    want = struct.unpack("<I", data[:4])[0]
    data = data[4:]
    while len(data) < want:
        more = conn.recv(want - len(data))
        if not more:
            raise ValueError("request cut short")
        data += more
    parts = data.decode("utf-8", "surrogateescape").split("\0")
    if len(fds) not in (2, 3):
        raise ValueError("malformed request")
    return parts[0], [e for e in parts[1:] if "=" in e], fds


def _become_worker(wire, env, fds, keep, serve, why):
    """In the forked child: the fds in place, the sandbox entered, serve."""
    rc = 127
    try:
        for fd in keep:
            os.close(fd)
        high = [fcntl_dup(fd) for fd in fds]
        for fd in fds:
            os.close(fd)
        chan, log = high[0], high[1]
        ruleset = high[2] if len(high) > 2 else -1
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.dup2(chan, 3)
        for fd in (null, log, chan):
            if fd > 3:  # /dev/null may have been given 3, now the channel
                os.close(fd)
        os.environ.clear()
        os.environ.update(dict(e.split("=", 1) for e in env))
        _forget_parent_folders()
        lib = ctypes.CDLL(os.environ.get(
            "KERNLAB_WORKER_LIB", os.path.join(HERE, "libkernlab-worker.so")))
        lib.kl_worker_enter_sandbox.argtypes = [ctypes.c_char_p, ctypes.c_int]
        if lib.kl_worker_enter_sandbox(
                wire.encode("utf-8", "surrogateescape"), ruleset) != 0:
            os.write(2, b"kl-pyworker: cannot enter the worker's sandbox\n")
            os._exit(126)
        if ruleset >= 0:
            os.close(ruleset)
        rc = serve()
    except BaseException:
        try:
            os.write(2, ("kl-pyworker: " + why() + "\n").encode())
        except OSError:
            pass
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    os._exit(rc if isinstance(rc, int) else 1)


def _forget_parent_folders():
    """What the imports remembered of the parent's private folder, which
    this worker may not write: the temporary folder tempfile settled on
    (torch's inductor cache lies under it) and Triton's home (its cache),
    both read at import. Each worker gets its own, as an exec'd one would:
    its TMPDIR, its HOME."""
    import tempfile
    tempfile.tempdir = None
    os.environ.setdefault("TRITON_HOME", os.environ.get("HOME", ""))


def fcntl_dup(fd):
    """fd again, numbered above the standard ones and the channel's 3."""
    import fcntl
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)


def zygote(name, idle_s, serve, why):
    """Serve as the warm parent NAME until IDLE_S seconds pass idle; each
    worker forked runs serve() in its sandbox."""
    import select
    import signal
    import socket
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        srv.bind("\0" + name)  # taken: another one serves this name
    except OSError:
        return 0
    srv.listen(64)
    home = os.environ.get("HOME", "")
    _preload()
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children = {}  # pid -> the client's connection
    orphans = set()  # children whose client left: killed, not yet reaped
    last = time.monotonic()
    while True:
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            orphans.discard(pid)
            conn = children.pop(pid, None)
            if conn is not None:
                try:
                    conn.sendall(b'{"status":%d}\n' % status)
                except OSError:
                    pass  # the client left first
                conn.close()
            last = time.monotonic()
        left = idle_s - (time.monotonic() - last)
        if not children and left <= 0:
            break
        # a client keeps its connection until its worker's status comes
        # back: one that closes it first is gone (killed, cancelled by kl
        # mcp) and takes its worker with it, which no one else would end
        waiting = [c for p, c in children.items() if p not in orphans]
        ready, _, _ = select.select([srv, wake_r] + waiting, [], [],
                                    max(left, 0.05) if not children else None)
        for pid, c in list(children.items()):
            if c not in ready or pid in orphans:
                continue
            try:
                gone = c.recv(4096, socket.MSG_DONTWAIT) == b""
            except BlockingIOError:
                gone = False
            except OSError:
                gone = True
            if gone:
                orphans.add(pid)
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if wake_r in ready:
            try:
                os.read(wake_r, 4096)
            except BlockingIOError:
                pass
        if srv not in ready:
            continue
        conn, _ = srv.accept()
        last = time.monotonic()
        fds = []
        try:
            cred = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                   struct.calcsize("3i"))
            if struct.unpack("3i", cred)[1] != os.getuid():
                raise PermissionError("another user")
            wire, env, fds = _received(conn)
            pid = os.fork()
            if pid == 0:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                keep = [srv.detach(), conn.detach(), wake_r, wake_w] + \
                    [c.detach() for c in children.values()]
                _become_worker(wire, env, fds, keep, serve, why)
            children[pid] = conn
            conn.sendall(b'{"pid":%d}\n' % pid)
        except Exception:
            conn.close()
        finally:
            for fd in fds:
                os.close(fd)
    srv.close()
    # the private folder kl made for it (kl-pyworker-parent-XXXXXX), only
    if os.path.basename(home).startswith("kl-pyworker-parent-"):
        import shutil
        shutil.rmtree(home, ignore_errors=True)
    return 0
