"""Namespaces and mounts for the sandbox server, the same shape as root and without root.

``isolate()`` moves the calling process into its own PID, network, IPC and mount namespaces
(first into its own user namespace when not root, where the kernel allows unprivileged user
namespaces) and returns in the namespace's PID 1. Its root is then a new, read-only tmpfs
that holds only what a ``View`` shows: the system's programs and libraries (``/usr``,
``/lib*``, ``/bin``, ``/etc``), the interpreter and its packages, bound in read-only; the
project, its cases, recordings and results, ``/home``, ``/run`` (and the daemons' sockets
there) are not in it. ``/tmp``, ``/var/tmp``, ``/dev/shm`` and ``/run/lock`` are private
tmpfs, ``/dev`` holds five harmless devices, and ``/proc`` is a fresh one that shows only
the namespace's processes. The host's tree is detached (``pivot_root``).

``drop_privileges()`` is what a sample does before running: ``nobody`` without
supplementary groups as root; without root, no capabilities in the user namespace (so it
can neither unmount the fresh ``/proc`` nor remount anything writable).
"""

from __future__ import annotations

import ctypes
import os
import signal
import stat
from collections.abc import Iterable

#: ``typing`` only for the checker: the repository sandbox's server, which imports this
#: module, starts twice per item and imports as little as it can (so no dataclasses).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER = 0x00020000, 0x08000000, 0x10000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 32, 4096, 8192, 0x4000, 1 << 18
MNT_DETACH = 2
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
PR_SET_SECUREBITS, PR_SET_NO_NEW_PRIVS = 28, 38
# NOROOT, NO_SETUID_FIXUP and KEEP_CAPS, each locked: exec never gives capabilities back.
SECUREBITS_LOCKED = 0b101111
NOBODY = 65534
#: Under root a sample runs as a user of its server's own, this plus the server's host pid
#: (unique while it runs; no account has such a uid), never a uid other programs share:
#: RLIMIT_NPROC counts every process of a uid, so under ``nobody`` the processes of other
#: servers' samples would make this sample's fork fail, its verdict hanging on the load.
SAMPLE_UID_BASE = 0x40000000
WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
#: The system's programs, libraries and configuration: what an interpreter and the
#: libraries it loads expect to find (never /home, /root, /run, /var, /srv, /opt, /mnt).
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
DEVICES = ("null", "zero", "full", "random", "urandom")
DEVICE_LINKS = {
    "fd": "/proc/self/fd",
    "stdin": "/proc/self/fd/0",
    "stdout": "/proc/self/fd/1",
    "stderr": "/proc/self/fd/2",
}
#: Where the sample's root is put together (hidden under it once it is the root).
STAGE = "/tmp"
# Mount flags a user namespace may not clear when remounting (the kernel locks them).
LOCKED_FLAGS = {
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
}

_libc = ctypes.CDLL(None, use_errno=True)

#: The variable naming a writable site folder the environment's python also reads, set in
#: the sandbox only: what an ``install`` step installs goes there (the environment itself
#: is read-only).
SITE_VARIABLE = "PROMPTEVAL_SITE"


class Isolation:
    """What the server got; ``missing`` names what it did not, and why."""

    def __init__(
        self, *, mode: str = "none", uid: int = NOBODY, missing: list[str] | None = None
    ) -> None:
        self.mode = mode  # "root", "user namespace" or "none"
        self.network_isolated = False
        self.own_pids = False
        self.fs_readonly = False
        self.fs_private = False
        self.fresh_proc = False
        self.uid = uid  # the user a sample runs as, under root
        self.missing: list[str] = [] if missing is None else missing

    @property
    def complete(self) -> bool:
        return not self.missing

    def to_json(self) -> dict[str, Any]:
        return dict(vars(self))


def _call(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str) -> None:
    _call(
        _libc.mount(
            source.encode() if source else None,
            target.encode(),
            fstype.encode() if fstype else None,
            flags,
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def _write(path: str, text: str) -> None:
    with open(path, "w") as file:
        file.write(text)


def _own_user_namespace(uid: int, gid: int) -> None:
    _call(
        _libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC),
        "unshare (unprivileged user namespaces)",
    )
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"0 {uid} 1")
    _write("/proc/self/gid_map", f"0 {gid} 1")


def _user_namespace_works(uid: int, gid: int) -> bool:
    """Try in a child first: where a policy (AppArmor) lets ``unshare`` succeed but the
    mapping fail, this process must not be left in a half-made namespace."""
    child = os.fork()
    if child == 0:
        try:
            _own_user_namespace(uid, gid)
        except OSError:
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(child, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _enter_namespaces(root: bool) -> str:
    if root:
        _call(_libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC), "unshare")
        return "root"
    uid, gid = os.geteuid(), os.getegid()
    if not _user_namespace_works(uid, gid):
        raise OSError(1, "unprivileged user namespaces are not allowed here")
    _own_user_namespace(uid, gid)
    return "user namespace"


def _become_pid_one() -> None:
    """Fork; the parent waits and exits with the child, which is PID 1 of the new
    namespace and returns (dying with the parent). SIGTERM to the parent kills the child
    and the parent exits once the whole namespace has: its PID 1 is reaped only after
    every process in it is gone (killing the parent instead leaves them running a while)."""
    child = os.fork()
    if child:
        signal.signal(signal.SIGTERM, lambda *_: os.kill(child, signal.SIGKILL))
        _, status = os.waitpid(child, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _unescape(path: str) -> str:
    return path.encode().decode("unicode_escape") if "\\" in path else path


def _mounts() -> list[tuple[str, int]]:
    """Every mount point with the flags a remount must keep, parents first."""
    found = []
    with open("/proc/self/mountinfo") as mountinfo:
        for line in mountinfo:
            fields = line.split()
            options = fields[5].split(",")
            flags = sum(LOCKED_FLAGS.get(option, 0) for option in options)
            found.append((_unescape(fields[4]), flags))
    return found


def _readonly(writable: list[str]) -> list[str]:
    """Remount every mount but ``writable`` read-only; return the mount points that refused."""
    refused = []
    for target, flags in _mounts():
        if target in writable:
            continue
        try:
            _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags, "")
        except OSError:
            if os.path.exists(target):  # over-mounted paths are out of reach anyway
                refused.append(target)
    return refused


def _real_dirs(paths: Iterable[str]) -> list[str]:
    return [p for p in dict.fromkeys(os.path.realpath(p) for p in paths) if os.path.isdir(p)]


def within(path: str, top: str) -> bool:
    """``path`` is ``top`` or below it (both real paths)."""
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


class View:
    """What a sample sees of the host's files: ``shown`` bound in read-only (real paths),
    ``hidden`` covered with an empty tmpfs where a shown path holds them, ``links`` the
    paths whose symlinks are made again (``/lib64 -> usr/lib64``, a venv's interpreter);
    ``placed``: (host folder, path in the sandbox, writable), folders shown under another
    name (a repository task's copy at /repo), only the writable ones left writable."""

    def __init__(
        self,
        shown: tuple[str, ...],
        hidden: tuple[str, ...] = (),
        links: tuple[str, ...] = (),
        placed: tuple[tuple[str, str, bool], ...] = (),
    ) -> None:
        self.shown = shown
        self.hidden = hidden
        self.links = links
        self.placed = placed

    def plan(self) -> list[tuple[str, str]]:
        """(kind, path) mounts, parents first: "tmpfs" (writable), "hide" or "bind"; a
        path already shown by a bind above it (and not hidden between) is left out."""
        steps = [("tmpfs", p) for p in _real_dirs(WRITABLE)]
        steps += [("hide", p) for p in _real_dirs(self.hidden)]
        steps += [("bind", p) for p in dict.fromkeys(map(os.path.realpath, self.shown))]
        steps.sort(key=lambda step: (step[1].count(os.sep), step[0] != "tmpfs"))
        planned: list[tuple[str, str]] = []
        for kind, path in steps:
            above = [(k, p) for k, p in planned if within(path, p)]
            covered = max(above, key=lambda s: s[1].count(os.sep), default=None)
            if kind == "bind" and covered is not None and covered[0] == "bind":
                continue  # visible already, through its parent's bind
            if kind == "hide" and (covered is None or covered[0] != "bind"):
                continue  # nothing shows it: nothing to hide
            planned.append((kind, path))
        return planned


def _link_the_way(path: str, root: str, depth: int = 0) -> None:
    """Make each symlink on the way to ``path`` again below ``root`` where the view lacks
    it, following it (the way to its target may hold links too)."""
    parts = path.split(os.sep)[1:]
    for index in range(len(parts)):
        here = os.sep + os.path.join(*parts[: index + 1])
        if not os.path.islink(here):
            continue
        target = os.readlink(here)
        if not os.path.lexists(root + here):
            os.makedirs(os.path.dirname(root + here), mode=0o755, exist_ok=True)
            os.symlink(target, root + here)
        if depth < 8:
            rest = parts[index + 1 :]
            resolved = os.path.normpath(os.path.join(os.path.dirname(here), target, *rest))
            _link_the_way(resolved, root, depth + 1)
        return


def _build_root(view: View, root: str) -> None:
    """The sample's filesystem, on the tmpfs at ``root``: the view's mounts, a few devices
    and a fresh /proc. The sources are held open first: ``root`` may hide some of them."""
    plan = view.plan()
    held = {path: os.open(path, os.O_PATH) for kind, path in plan if kind == "bind"}
    placed = [
        (os.open(source, os.O_PATH | os.O_DIRECTORY), target) for source, target, _ in view.placed
    ]
    devices = {name: os.open(f"/dev/{name}", os.O_PATH) for name in DEVICES}
    try:
        _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=1m")
        for kind, path in plan:
            target = root + path
            if kind == "bind":
                if stat.S_ISDIR(os.fstat(held[path]).st_mode):
                    os.makedirs(target, mode=0o755, exist_ok=True)
                else:
                    os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
                    open(target, "a").close()
                _mount(f"/proc/self/fd/{held[path]}", target, None, MS_BIND | MS_REC, "")
            else:
                os.makedirs(target, mode=0o755, exist_ok=True)
                size = (
                    "size=64m,nr_inodes=4096,mode=1777" if kind == "tmpfs" else "size=4k,mode=755"
                )
                _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, size)
        for path in view.links:
            _link_the_way(path, root)
        for handle, target in placed:
            os.makedirs(root + target, mode=0o755, exist_ok=True)
            _mount(f"/proc/self/fd/{handle}", root + target, None, MS_BIND | MS_REC, "")
        for name, handle in devices.items():
            open(f"{root}/dev/{name}", "a").close()
            _mount(f"/proc/self/fd/{handle}", f"{root}/dev/{name}", None, MS_BIND, "")
        for name, target in DEVICE_LINKS.items():
            if not os.path.lexists(f"{root}/dev/{name}"):
                os.symlink(target, f"{root}/dev/{name}")
        os.makedirs(f"{root}/proc", mode=0o555, exist_ok=True)
        # while the host's /proc is still in this namespace: the kernel wants one in full
        _mount("proc", f"{root}/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "")
    finally:
        for handle in (*held.values(), *devices.values(), *(h for h, _ in placed)):
            os.close(handle)


def _enter_root(root: str) -> None:
    """Make ``root`` the root; the host's tree is detached, out of reach of every path."""
    os.chdir(root)
    if _PIVOT_ROOT is not None:
        _call(_libc.syscall(_PIVOT_ROOT, b".", b"."), "pivot_root")
        _call(_libc.umount2(b".", MNT_DETACH), "umount the host's root")
    else:  # an architecture whose syscall number this module does not know
        _mount(root, "/", None, MS_MOVE, "")
        os.chroot(".")
    os.chdir("/")


def isolate(root: bool, view: View) -> Isolation:
    """Enter the namespaces and set up the mounts (see the module docstring). On failure,
    the process is where it was, and ``missing`` says why."""
    found = Isolation(uid=SAMPLE_UID_BASE + os.getpid() if root else NOBODY)
    try:
        found.mode = _enter_namespaces(root)
    except OSError as exc:
        found.missing.append(
            f"no namespaces ({exc.strerror}): without root, the system must allow "
            "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 and "
            "user.max_user_namespaces > 0; on Ubuntu 24.04+ also "
            "kernel.apparmor_restrict_unprivileged_userns=0)"
        )
        return found
    _become_pid_one()
    found.own_pids = found.network_isolated = True
    try:
        _mount(None, "/", None, MS_REC | MS_PRIVATE, "")
        _build_root(view, STAGE)
        _enter_root(STAGE)
        found.fresh_proc = found.fs_private = True
        writable = _real_dirs(WRITABLE) + [target for _, target, w in view.placed if w]
        refused = _readonly(writable)
        found.fs_readonly = not refused
        if refused:
            found.missing.append(f"could not make read-only: {', '.join(refused)}")
    except OSError as exc:
        found.missing.append(f"mount setup failed: {exc}")
    return found


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    )


def drop_privileges(root: bool, uid: int = NOBODY) -> None:
    """In the sample: as root become ``uid`` (group nobody); in a user namespace drop every
    capability for good. Either way, no new privileges through exec."""
    if root:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(uid)
    else:
        _call(_libc.prctl(PR_SET_SECUREBITS, SECUREBITS_LOCKED, 0, 0, 0), "securebits")
        for cap in range(64):
            if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                break  # past the last capability this kernel knows
        header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
        data = (_CapData * 2)()
        _call(_libc.capset(ctypes.byref(header), data), "capset")
    _call(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


_MACHINE = os.uname().machine
#: Calls that hold memory no address-space limit counts (a memfd's pages, a secret
#: memfd's, mapped a window at a time, SysV segments kept after detaching), by
#: architecture: its audit number and the calls' numbers.
_UNBOUNDED_MEMORY = {
    "x86_64": (0xC000003E, (319, 447, 29)),  # memfd_create, memfd_secret, shmget
    "aarch64": (0xC00000B7, (279, 447, 194)),
}
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
BPF_LD_ABS_W, BPF_JEQ, BPF_JGE, BPF_RET = 0x20, 0x15, 0x35, 0x06


class _Filter(ctypes.Structure):
    _fields_ = (
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    )


class _Program(ctypes.Structure):
    _fields_ = (("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_Filter)))


def forbid_unbounded_memory() -> None:
    """Where a process's memory is bounded by its address space alone (no cgroup), refuse
    the calls that hold memory outside it (``EPERM``), and every call of another ABI (x32,
    32-bit), whose numbers differ. Nothing where this module does not know the numbers."""
    known = _UNBOUNDED_MEMORY.get(_MACHINE)
    if known is None:
        return
    arch, calls = known
    deny = SECCOMP_RET_ERRNO | 1
    count = len(calls)
    steps = [
        (BPF_LD_ABS_W, 0, 0, 4),  # seccomp_data.arch
        (BPF_JEQ, 1, 0, arch),
        (BPF_RET, 0, 0, deny),
        (BPF_LD_ABS_W, 0, 0, 0),  # seccomp_data.nr
        (BPF_JGE, count + 1, 0, 0x40000000),  # x32's numbers
        *((BPF_JEQ, count - index, 0, number) for index, number in enumerate(calls)),
        (BPF_RET, 0, 0, SECCOMP_RET_ALLOW),
        (BPF_RET, 0, 0, deny),
    ]
    program = (_Filter * len(steps))(*(_Filter(*step) for step in steps))
    fprog = _Program(len(steps), program)
    _call(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp")


#: clone(2)'s and pivot_root(2)'s numbers, where this module knows them.
_CLONE = {"x86_64": 56, "aarch64": 220}.get(_MACHINE)
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(_MACHINE)


def fork_own_pids() -> int:
    """``os.fork()``, the child being PID 1 of a PID namespace of its own: it can signal,
    or see by pid, nothing outside it, and everything it starts ends with it. unshare()
    could do it once per process; clone() does it per child. Only from a single-threaded
    process (the zygote): the child skips Python's after-fork hooks. Falls back to
    ``os.fork()`` where the architecture or the kernel does not allow it."""
    if _CLONE is not None:
        # its own IPC namespace too: SysV memory it makes ends with it
        flags = CLONE_NEWPID | CLONE_NEWIPC | signal.SIGCHLD
        pid = _libc.syscall(_CLONE, flags, 0, 0, 0, 0)
        if pid >= 0:
            return int(pid)
    return os.fork()


def set_dumpable(dumpable: bool) -> None:
    """Non-dumpable: processes of the same user can neither ptrace this one nor read its
    ``/proc/<pid>/environ`` (where an API key would be)."""
    _libc.prctl(PR_SET_DUMPABLE, int(dumpable), 0, 0, 0)
