"""Child entry point of :mod:`sim_web.tools.python.sandbox`: runs one agent program inside the sandbox.

Started as ``python -s -S -P -B _runner.py name=value ...`` (the code is in ``main.py``
in the working directory), inside bubblewrap (or, for trusted code, the best-effort sandbox).
Uses the standard library only and never imports :mod:`sim_web`; it avoids ``json``, ``socket``
and anything that pulls in ``re``/``enum`` so that startup stays cheap (those imports cost more
than starting the interpreter itself).

Order of work, all before the first line of user code:

1. (the parent's starter already put the process into the call's cgroups, if any)
2. set the resource limits (CPU seconds, address space, file size, no core files, and
   ``RLIMIT_NPROC`` when the parent computed one: the kernel ignores it for root);
3. in the best-effort PID namespace, stay as PID 1 (bubblewrap brings its own init) and fork
   the worker (PID 1 ignores signals it has no handler for, even ``SIGXCPU`` and ``SIGSEGV``, so
   user code must not run as PID 1); when the worker exits, PID 1 exits with its status and the kernel kills whatever is left;
4. install the best-effort Python-level guards: no sockets (unless allowed), no writes outside
   the writable directories, no new sessions, and a shared counter that caps process creation.

The guards patch Python functions only. Code that uses ``ctypes``, ``_io.FileIO``, ``posix``
or a shell goes around them; they give a clear error to ordinary code and are **not** a
security boundary. The boundary is what the kernel enforces: bubblewrap's namespaces and
read-only mounts, its seccomp filter, the cgroups and the rlimits.
"""

import errno
import os
import resource
import sys

_NET_DENIED = "network access is disabled in this sandbox (PythonInterpreter runs offline)"
_WRITE_DENIED = "writing outside the working directory is disabled in this sandbox"
_DEVICES = (os.devnull, "/dev/stdout", "/dev/stderr")  # writable although outside


def _set_limits(settings):
    cpu = int(settings["cpu_s"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))  # SIGXCPU, then SIGKILL
    memory = int(settings["memory_mb"]) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    file_bytes = int(settings["max_file_mb"]) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if settings["nproc"]:
        nproc = int(settings["nproc"])
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))


def _supervise(worker):
    """PID 1 of the namespace: reap children until the worker exits, then exit like it."""
    status = 0
    while True:
        try:
            pid, status_now = os.wait()
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if pid == worker:
            status = status_now
            break
    if os.WIFSIGNALED(status):  # PID 1 cannot die by its own signal: use the shell convention
        os._exit(128 + os.WTERMSIG(status))
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _inside(path, roots, dir_fd=None):
    """Whether ``path`` (str, bytes, PathLike or fd) resolves inside one of ``roots``."""
    if isinstance(path, int):
        return True  # an already-open descriptor
    path = os.fsdecode(os.fspath(path))
    if path in _DEVICES:
        return True
    if dir_fd is not None and not os.path.isabs(path):
        path = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), path)
    real = os.path.realpath(path)
    return real in _DEVICES or any(real == root or real.startswith(root + os.sep) for root in roots)


def _install_write_guard(roots):
    import builtins
    import io

    def deny(path):
        raise PermissionError(errno.EACCES, _WRITE_DENIED, os.fsdecode(os.fspath(path)))

    real_open = builtins.open

    def guarded_open(file, mode="r", *args, **kwargs):
        if any(flag in mode for flag in "wax+") and not _inside(file, roots):
            deny(file)
        return real_open(file, mode, *args, **kwargs)

    builtins.open = io.open = guarded_open
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    real_os_open = os.open

    def guarded_os_open(path, flags, mode=0o777, *, dir_fd=None):
        if flags & write_flags and not _inside(path, roots, dir_fd):
            deny(path)
        return real_os_open(path, flags, mode, dir_fd=dir_fd)

    os.open = guarded_os_open

    def path_guard(function, positions):
        def guarded(*args, **kwargs):
            dir_fd = kwargs.get("dir_fd")
            for index in positions:
                if index < len(args) and not _inside(args[index], roots, dir_fd):
                    deny(args[index])
            return function(*args, **kwargs)

        return guarded

    for name, positions in (
        ("remove", (0,)),
        ("unlink", (0,)),
        ("rmdir", (0,)),
        ("mkdir", (0,)),
        ("rename", (0, 1)),
        ("replace", (0, 1)),
        ("symlink", (1,)),
        ("link", (0, 1)),
        ("chmod", (0,)),
        ("chown", (0,)),
        ("lchown", (0,)),
        ("truncate", (0,)),
        ("utime", (0,)),
        ("mkfifo", (0,)),
        ("mknod", (0,)),
    ):
        if hasattr(os, name):
            setattr(os, name, path_guard(getattr(os, name), positions))


def _install_network_guard():
    """Patch the C module ``_socket`` before ``socket.py`` is imported (importing it is slow).

    ``socket.socket`` subclasses ``_socket.socket`` and calls ``_socket.socket.__init__`` by
    module attribute, and ``socket.py`` copies ``getaddrinfo`` & co. from ``_socket`` when it
    is first imported, so both the class and the resolver functions end up guarded.
    """
    import _socket

    blocked = {_socket.AF_INET, _socket.AF_INET6}
    real_socket = _socket.socket

    def deny(*_args, **_kwargs):
        raise PermissionError(errno.EACCES, _NET_DENIED)

    class GuardedSocket(real_socket):
        __slots__ = ()  # socket.socket adds __weakref__ itself; a second one is a TypeError

        def __init__(self, family=-1, type=-1, proto=-1, fileno=None):
            if fileno is None and (family == -1 or family in blocked):
                deny()
            real_socket.__init__(self, family, type, proto, fileno)

    GuardedSocket.__name__ = GuardedSocket.__qualname__ = "socket"
    _socket.socket = _socket.SocketType = GuardedSocket
    for name in ("getaddrinfo", "gethostbyname", "gethostbyname_ex", "gethostbyaddr"):
        setattr(_socket, name, deny)


def _install_process_guard(max_processes, root):
    """Cap process creation with a counter shared by every descendant (anonymous shared mmap)."""
    import _posixsubprocess
    import mmap
    import select

    counter = mmap.mmap(-1, 8)  # MAP_SHARED | MAP_ANONYMOUS: inherited across fork
    # A one-token pipe is the mutex (file locks are refused by the seccomp filter: they would be a channel
    # between sandboxes). Whoever reads the byte holds it; writing it back releases it. A holder that dies in
    # between would keep it: waiters go on without it after a while rather than hang (the count is a guard
    # on top of the sandbox's process limits, not the limit itself).
    token_r, token_w = os.pipe()
    os.write(token_w, b"t")

    def take_slot():
        held = bool(select.select([token_r], [], [], 5.0)[0]) and os.read(token_r, 1) == b"t"
        try:
            used = int.from_bytes(counter[:8], "little")
            if used >= max_processes:
                raise BlockingIOError(
                    errno.EAGAIN,
                    f"Resource temporarily unavailable: this sandbox allows at most {max_processes} child processes",
                )
            counter[:8] = (used + 1).to_bytes(8, "little")
        finally:
            if held:
                os.write(token_w, b"t")

    def counted(function):
        def wrapper(*args, **kwargs):
            take_slot()
            return function(*args, **kwargs)

        return wrapper

    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
        if hasattr(os, name):
            setattr(os, name, counted(getattr(os, name)))
    _posixsubprocess.fork_exec = counted(_posixsubprocess.fork_exec)  # before subprocess loads

    def no_new_session(*_args, **_kwargs):
        raise PermissionError(errno.EPERM, "leaving the sandbox's process group is not allowed")

    os.setsid = os.setpgid = no_new_session


def _run_main(filename):
    """Execute ``filename`` as ``__main__``; tracebacks look like ``python main.py``'s."""
    import types

    with open(filename, encoding="utf-8") as handle:
        source = handle.read()
    main = types.ModuleType("__main__")
    main.__file__ = filename
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main
    sys.argv = [filename]
    try:
        code = compile(source, filename, "exec")
        exec(code, main.__dict__)
    except SystemExit:
        raise
    except BaseException as exc:  # everything the program raises is its output
        if isinstance(exc, MemoryError):
            main.__dict__.clear()  # free the program's data so the traceback can be printed
            import gc

            gc.collect()
        _print_exception(exc)
        sys.exit(1)


def _print_exception(exc):
    """Print ``exc`` like the interpreter would, without this runner's frames."""
    try:
        import traceback

        report = traceback.TracebackException(type(exc), exc, exc.__traceback__)
        pending = [report]
        while pending:  # the exception and the ones chained to it
            current = pending.pop()
            frames = [f for f in current.stack if f.filename != __file__]
            current.stack = traceback.StackSummary.from_list(frames)
            pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
        sys.stderr.write("".join(report.format()))
    except BaseException:  # e.g. still out of memory: say at least what it was
        sys.stderr.write(f"{type(exc).__name__}: {exc}\n")
    sys.stderr.flush()


def _parse_settings(args):
    """``name=value`` arguments; the parent (:mod:`sim_web.tools.python.sandbox`) writes them."""
    settings = {}
    for arg in args:
        name, _, value = arg.partition("=")
        settings[name] = value
    return settings


def main():
    settings = _parse_settings(sys.argv[1:])
    root = os.path.realpath(settings["workdir"])
    os.chdir(root)
    sys.path.extend(p for p in settings["site_dirs"].split(os.pathsep) if p)
    _set_limits(settings)
    if settings["pid1"] == "1":
        worker = os.fork()
        if worker:
            _supervise(worker)
    for stream in (sys.stdout, sys.stderr):  # keep output written before a timeout kill
        stream.reconfigure(encoding="utf-8", errors="backslashreplace", line_buffering=True)
    _install_process_guard(int(settings["max_processes"]), root)
    writable = [os.path.realpath(p) for p in settings["writable"].split(os.pathsep) if p]
    _install_write_guard(writable or [root])
    if settings["allow_network"] != "1":
        _install_network_guard()
    _run_main("main.py")


if __name__ == "__main__":
    main()
