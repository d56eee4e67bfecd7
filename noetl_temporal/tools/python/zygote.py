"""The python tool's fork server ("zygote"): a fresh interpreter per worker event loop (never
a fork of the worker) that loads the runner and the modules most tasks use, then only
forks. ``SPARES`` children wait ahead of time on the tasks socket, each in its own session
with its parent-death signal set; the one that takes a task serves it (``runner.serve``)
and is replaced (``REPLACE_AFTER``). The server never runs user code, owns every task
process (it alone signals them, on the worker's ``kill``, and reports each ``exit``), and
kills what a task left behind before it reports its exit (``runner.reaping``).
See docs/tools.md#the-fork-server (its protocol, isolation and costs) and
docs/tools.md#a-task-owns-its-processes.
"""

import _signal
import os
import select
import signal
import socket
import sys
import time


def _load_runner(path):
    import importlib.util

    # A package (its __init__.py): registered under its name before it runs, as its modules
    # import each other relatively, and found in its own directory, never on sys.path.
    spec = importlib.util.spec_from_file_location("_noetl_pyrunner", path,
                                                  submodule_search_locations=[os.path.dirname(path)])
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the python tool runner from {path}")
    runner = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    return runner


# Children forked ahead of time, each waiting for a task (each one costs its RSS, mostly
# shared with the server). Two: the next task finds one waiting while the one taken is
# replaced, so the fork and the spare's start are off the path of back-to-back tasks.
# perf: forking and starting a spare off the task's path (back-to-back tasks) — benchmark: probes.python_overhead, probes.fork_floor
SPARES = 2
WARM_AFTER = 0.05  # seconds a new spare waits for a task before it warms up (see _spare)
# A taken spare is replaced once its task's process has exited, at once when another task
# is already waiting, or at the latest this long (seconds) after it was taken: forking and
# warming a spare while a task runs would take the CPU that task needs (2 cores).
# perf: a spare's fork kept off the CPU a running task needs — benchmark: probes.python_overhead
REPLACE_AFTER = 0.02
RETRY_FORK = 0.1  # seconds before forking again after a failed fork


def _spare(zygote, warm):
    """In a forked child: get ready, wait for one task, serve it, never return.

    ``warm``: touch what a task touches before it arrives (``runner.warm``), unless a
    task is already waiting for this child."""
    try:
        os.setsid()  # its own process group: a timeout kills everything the code started
        zygote.runner._die_with_parent(os.getppid())
        # perf: ~50 copy-on-write pages of the server per task — benchmark: probes.fork_floor
        # _signal, not signal: its enum wrappers touch ~50 pages of the server (copy-on-write)
        _signal.set_wakeup_fd(-1)
        _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)
        _signal.signal(_signal.SIGTERM, _signal.SIG_DFL)
        os.close(zygote.wake_r)
        os.close(zygote.wake_w)
        os.close(zygote.taken_r)
        # Its first-touch page faults now, not on the task's path; but only once no task
        # came for WARM_AFTER: in a burst the next task is already on its way, the warm-up
        # would only take a core from it (docs/performance.md, "A shell task's cost under
        # the subreaper"). A task wakes both spares here; the one that does not get it
        # waits for the next task unwarmed (about 0.3 ms more for a python task).
        if warm and not select.select([zygote.tasks], [], [], WARM_AFTER)[0]:
            zygote.runner.warm()
        task_id, fds = _receive(zygote.tasks)
        if task_id is None:  # the worker closed the server
            os._exit(0)
        os.write(zygote.taken_w, f"{task_id} {os.getpid()}\n".encode())  # < PIPE_BUF: atomic
        for sock in (zygote.tasks, zygote.sock):  # nothing of the server stays open for the code
            os.close(sock.detach())  # (not socket.close: Python code, its pages not yet touched)
        os.close(zygote.taken_w)
        stdin, out, err, resp = fds
        for src, dst in ((stdin, 0), (out, 1), (err, 2)):
            os.dup2(src, dst)
            os.close(src)
        zygote.runner.serve(resp, zygote.path0)
    except BaseException:  # noqa: BLE001 - report on the task's stderr, never return into the loop
        try:
            import traceback

            traceback.print_exc()
            sys.stderr.flush()
        finally:
            os._exit(70)
    os._exit(70)


def _receive(sock):
    """One ``run <id>`` message and its four descriptors; (None, []) on EOF."""
    while True:
        try:
            msg, anc, _, _ = sock.recvmsg(256, socket.CMSG_SPACE(4 * 4), socket.MSG_CMSG_CLOEXEC)
        except InterruptedError:
            continue
        fds: list[int] = []
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.extend(int.from_bytes(data[i:i + 4], sys.byteorder) for i in range(0, len(data) - 3, 4))
        words = msg.decode().split()
        if len(words) == 2 and words[0] == "run" and len(fds) == 4:
            return words[1], fds
        for fd in fds:
            os.close(fd)
        if not msg:
            return None, []


class Zygote:
    def __init__(self, runner, sock, tasks, path0):
        self.runner, self.sock, self.tasks, self.path0 = runner, sock, tasks, path0
        self.spares = set()  # pids of children waiting for a task
        self.running = {}  # child pid -> task id
        self.by_id = {}    # task id -> child pid
        self.kills = {}    # task id -> signal asked for before its child reported in
        self.taken_r, self.taken_w = os.pipe()  # spares report "<id> <pid>" when they take a task
        os.set_blocking(self.taken_r, False)
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so the wakeup fd is written
        self.stopping = False  # SIGTERM: the worker died (our parent-death signal) or stops us
        signal.signal(signal.SIGTERM, self._stop)
        self._taken_buf = b""
        self.replace_at = 0.0  # a missing spare is forked by then at the latest (monotonic s)
        self.retry_at = 0.0    # no fork before then (after a failed one)

    def _stop(self, *_):
        self.stopping = True

    def send(self, text):
        try:
            self.sock.send(text.encode())
        except OSError:  # the worker is gone; EOF on the next read ends us
            pass

    def loop(self):
        poller = select.poll()
        for fd in (self.sock.fileno(), self.wake_r, self.taken_r):
            poller.register(fd, select.POLLIN)
        tasks = self.tasks.fileno()
        watching = False  # the tasks socket, while a spare is missing: is a task waiting?
        self.top_up(warm=True)
        while True:
            now = time.monotonic()
            if self.missing() and now >= max(self.replace_at, self.retry_at):
                self.top_up(warm=not self.running)
            missing = self.missing()
            watch = missing and now >= self.retry_at  # not while a failed fork waits to retry
            if watch != watching:
                (poller.register(tasks, select.POLLIN) if watch else poller.unregister(tasks))
                watching = watch
            timeout = None
            if missing:
                timeout = max((max(self.replace_at, self.retry_at) - time.monotonic()) * 1000, 1)
            waiting = exited = False
            for fd, _ in poller.poll(timeout):
                if fd == self.wake_r:
                    try:
                        os.read(self.wake_r, 4096)
                    except BlockingIOError:
                        pass
                    exited = self.reap() or exited
                    if self.stopping:
                        self.shutdown()
                        return
                elif fd == self.taken_r:
                    self.taken()
                elif fd == tasks:
                    waiting = True
                elif not self.control():
                    self.shutdown()
                    return
            if time.monotonic() < self.retry_at:
                continue
            if waiting:
                self.top_up(warm=False)
            elif exited:
                # Warm only when no other task runs: with tasks in parallel the CPU is
                # contended and the next one comes soon, so the warm-up would only add work.
                self.top_up(warm=not self.running)

    def missing(self):
        return len(self.spares) < SPARES

    def top_up(self, warm):
        while self.missing():
            try:
                pid = os.fork()
            except OSError as exc:  # out of processes: try again shortly
                print(f"python fork server: cannot fork: {exc}", file=sys.stderr, flush=True)
                self.retry_at = time.monotonic() + RETRY_FORK
                return
            if pid == 0:
                _spare(self, warm)
            self.spares.add(pid)

    def taken(self):
        try:  # non-blocking: an earlier call in this round may have read it all
            self._taken_buf += os.read(self.taken_r, 65536)
        except BlockingIOError:
            return
        *lines, self._taken_buf = self._taken_buf.split(b"\n")
        for line in lines:
            task_id, pid_text = line.decode().split()
            pid = int(pid_text)
            if pid in self.spares and len(self.spares) == SPARES:
                self.replace_at = time.monotonic() + REPLACE_AFTER
            self.spares.discard(pid)
            self.running[pid] = task_id
            self.by_id[task_id] = pid
            if task_id in self.kills:
                self.kill(task_id, self.kills.pop(task_id))

    def control(self):
        try:
            msg = self.sock.recv(256)
        except InterruptedError:
            return True
        except ConnectionError:  # the worker died without closing: as EOF, without a traceback
            return False
        if not msg:
            return False
        words = msg.decode().split()
        if words[0] == "kill":
            if select.select([self.taken_r], [], [], 0)[0]:
                self.taken()  # a report still in the pipe may be the one this kill is for
            if words[1] in self.by_id:
                self.kill(words[1], int(words[2]))
            else:  # its child has not reported in yet
                self.kills[words[1]] = int(words[2])
        return True

    def kill(self, task_id, sig):
        try:
            os.killpg(self.by_id[task_id], sig)
        except OSError:
            pass

    def reap(self):
        """Collect exited children; whether there were any."""
        if select.select([self.taken_r], [], [], 0)[0]:
            self.taken()  # a child reports in before it runs anything, so before it can exit
        reaped = False
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return reaped
            if pid == 0:
                return reaped
            reaped = True
            if pid not in self.running and select.select([self.taken_r], [], [], 0)[0]:
                # A spare that took a task after this round's first look, and has already
                # ended it (a shell command is over in a millisecond): its report came in
                # since, and the task's exit must be reported, or the worker waits forever.
                self.taken()
            self.spares.discard(pid)
            task_id = self.running.pop(pid, None)
            if task_id is not None:
                self.by_id.pop(task_id, None)
                self.kills.pop(task_id, None)
                # What the task's process left is ours now (we are a subreaper): it goes
                # before the task is reported done. A shell command's process is the
                # command itself (runner.reaping.run_command), so this sweep is what kills
                # what it left in the background.
                self.runner.reaping.sweep(skip=self.spares | set(self.running))
                self.send(f"exit {task_id} {os.waitstatus_to_exitcode(status)}")

    def shutdown(self):
        """Kill every process below us: spares, tasks and all they started."""
        self.runner.reaping.sweep()


def _take_path0():
    """Remove what the interpreter put in front of ``sys.path`` for this script, and return
    what a task gets there instead: ``''`` (its working directory, as under ``python -c``).

    Run as a script, that is this file's directory (our tool modules, which user code must
    not import as ``tool`` or ``spawn``); under ``-c`` it is ``''``; with ``-P`` or
    ``PYTHONSAFEPATH`` nothing is put there, and a task gets nothing either."""
    if not sys.path:
        return None
    first = sys.path[0]
    if first == "" or os.path.realpath(first) == os.path.dirname(os.path.realpath(__file__)):
        sys.path.pop(0)
        return ""
    return None


def main():
    # Our own imports must not come from the directory we start in; a task gets `''`
    # (its working directory) back in front of the path.
    path0 = _take_path0()
    runner = _load_runner(sys.argv[1])
    reaping = runner.reaping
    reaping.become_subreaper()  # a killed task's orphans come to us, not to init
    # SIGTERM, not SIGKILL, when the worker dies: we kill what is below us first (the loop
    # sees it; until the handler is in place, which is before any task, it simply ends us).
    reaping.prctl(reaping.PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != int(sys.argv[2]):
        os._exit(137)
    runner.start_site()  # started with -S: site, but .pth imports only when needed
    sock = socket.socket(fileno=int(sys.argv[3]))
    tasks = socket.socket(fileno=int(sys.argv[4]))
    for each in (sock, tasks):
        each.set_inheritable(False)
    runner.preload()
    import gc

    gc.freeze()  # children's collections then skip (and do not touch) the shared objects

    zygote = Zygote(runner, sock, tasks, path0)
    zygote.loop()
    os._exit(0)


if __name__ == "__main__":
    main()
