"""Namespaces and mounts for the sandbox server, the same shape as root and without root.

``isolate()`` moves the calling process into its own PID, network and mount namespaces
(first into its own user namespace when not root, where the kernel allows unprivileged user
namespaces) and returns in the namespace's PID 1. There the whole mount tree is read-only,
``/tmp``, ``/var/tmp``, ``/dev/shm`` and ``/run/lock`` are private tmpfs, and ``/proc`` is a
fresh one that shows only the namespace's processes. As root, the directories on the way to
the interpreter and its packages that ``nobody`` cannot enter (``/root`` for a Python under
``/root/.pyenv``) are covered with an empty tmpfs into which only that way is bound back.

``drop_privileges()`` is what a sample does before running: ``nobody`` as root; without
root, no capabilities in the user namespace (so it can neither unmount the fresh ``/proc``
nor remount anything writable).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import signal
import stat
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 0x4000, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
PR_SET_SECUREBITS, PR_SET_NO_NEW_PRIVS = 28, 38
# NOROOT, NO_SETUID_FIXUP and KEEP_CAPS, each locked: exec never gives capabilities back.
SECUREBITS_LOCKED = 0b101111
NOBODY = 65534
WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
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


@dataclass
class Isolation:
    """What the server got; ``missing`` names what it did not, and why."""

    mode: str = "none"  # "root", "user namespace" or "none"
    network_isolated: bool = False
    own_pids: bool = False
    fs_readonly: bool = False
    fs_private: bool = False
    fresh_proc: bool = False
    missing: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.missing

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


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
        _libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID),
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
        _call(_libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID), "unshare")
        return "root"
    uid, gid = os.geteuid(), os.getegid()
    if not _user_namespace_works(uid, gid):
        raise OSError(1, "unprivileged user namespaces are not allowed here")
    _own_user_namespace(uid, gid)
    return "user namespace"


def _become_pid_one() -> None:
    """Fork; the parent waits and exits with the child, which is PID 1 of the new
    namespace and returns (dying with the parent)."""
    child = os.fork()
    if child:
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


def _readonly() -> list[str]:
    """Remount every mount read-only; return the mount points that refused."""
    refused = []
    for target, flags in _mounts():
        try:
            _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags, "")
        except OSError:
            if os.path.exists(target):  # over-mounted paths are out of reach anyway
                refused.append(target)
    return refused


def _traversable_by_others(path: str) -> bool:
    return bool(os.stat(path).st_mode & stat.S_IXOTH)


def _cover(paths: list[str]) -> None:
    """As root, before dropping to nobody: cover each directory on the way to ``paths``
    that others cannot enter with an empty tmpfs, and bind back only the way through."""
    keep: dict[str, set[str]] = defaultdict(set)
    for path in paths:
        parts = os.path.realpath(path).split(os.sep)[1:]
        for depth in range(1, len(parts)):
            directory = os.sep + os.sep.join(parts[:depth])
            if os.path.isdir(directory) and not _traversable_by_others(directory):
                keep[directory].add(parts[depth])
    for directory in sorted(keep, key=lambda d: d.count(os.sep)):
        handles = {}
        for name in keep[directory]:
            with contextlib.suppress(OSError):
                handles[name] = os.open(os.path.join(directory, name), os.O_PATH)
        _mount("tmpfs", directory, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=64k")
        for name, handle in handles.items():
            target = os.path.join(directory, name)
            if stat.S_ISDIR(os.fstat(handle).st_mode):
                os.mkdir(target)
            else:
                open(target, "w").close()
            _mount(f"/proc/self/fd/{handle}", target, None, MS_BIND | MS_REC, "")
            os.close(handle)


def _held_open(paths: list[str], under: str) -> dict[str, int]:
    """The readable paths below ``under`` (the interpreter or a venv under /tmp), held open
    so that they can be bound back read-only over the private tmpfs about to hide them."""
    held: dict[str, int] = {}
    for path in paths:
        real = os.path.realpath(path)
        if real.startswith(under + os.sep) and not any(
            real.startswith(other + os.sep) for other in held
        ):
            with contextlib.suppress(OSError):
                held[real] = os.open(real, os.O_PATH)
    return held


def _bind_back(held: dict[str, int]) -> None:
    for path, handle in held.items():
        os.makedirs(path, mode=0o755, exist_ok=True)
        _mount(f"/proc/self/fd/{handle}", path, None, MS_BIND | MS_REC, "")
        _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY, "")
        os.close(handle)


def isolate(root: bool, readable: list[str]) -> Isolation:
    """Enter the namespaces and set up the mounts (see the module docstring). On failure,
    the process is where it was, and ``missing`` says why."""
    found = Isolation()
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
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "")
        found.fresh_proc = True
        if root:
            _cover(readable)
        refused = _readonly()
        found.fs_readonly = not refused
        if refused:
            found.missing.append(f"could not make read-only: {', '.join(refused)}")
        for path in dict.fromkeys(os.path.realpath(p) for p in WRITABLE):
            if os.path.isdir(path):
                inside = _held_open(readable, path)
                _mount(
                    "tmpfs",
                    path,
                    "tmpfs",
                    MS_NOSUID | MS_NODEV,
                    "size=64m,nr_inodes=4096,mode=1777",
                )
                _bind_back(inside)
        found.fs_private = True
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


def drop_privileges(root: bool) -> None:
    """In the sample: as root become nobody; in a user namespace drop every capability
    for good. Either way, no new privileges through exec."""
    if root:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    else:
        _call(_libc.prctl(PR_SET_SECUREBITS, SECUREBITS_LOCKED, 0, 0, 0), "securebits")
        for cap in range(64):
            if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                break  # past the last capability this kernel knows
        header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
        data = (_CapData * 2)()
        _call(_libc.capset(ctypes.byref(header), data), "capset")
    _call(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


#: clone(2)'s number, where this module knows it: a fork into a new PID namespace.
_CLONE = {"x86_64": 56, "aarch64": 220}.get(platform.machine())


def fork_own_pids() -> int:
    """``os.fork()``, the child being PID 1 of a PID namespace of its own: it can signal,
    or see by pid, nothing outside it, and everything it starts ends with it. unshare()
    could do it once per process; clone() does it per child. Only from a single-threaded
    process (the zygote): the child skips Python's after-fork hooks. Falls back to
    ``os.fork()`` where the architecture or the kernel does not allow it."""
    if _CLONE is not None:
        pid = _libc.syscall(_CLONE, CLONE_NEWPID | signal.SIGCHLD, 0, 0, 0, 0)
        if pid >= 0:
            return int(pid)
    return os.fork()


def set_dumpable(dumpable: bool) -> None:
    """Non-dumpable: processes of the same user can neither ptrace this one nor read its
    ``/proc/<pid>/environ`` (where an API key would be)."""
    _libc.prctl(PR_SET_DUMPABLE, int(dumpable), 0, 0, 0)
