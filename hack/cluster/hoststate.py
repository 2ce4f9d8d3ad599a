"""What a node changes on the host: record it, compare it, put it back (hack/cluster, root only).

    hoststate.py save FILE              record the host's state as JSON
    hoststate.py diff BEFORE [AFTER]    print the differences (AFTER default: now); exit 1 if any
    hoststate.py restore BEFORE         undo what changed since BEFORE, then diff; exit 1 if any
                                        difference is left

Recorded, one section each (a section's items are strings, compared as sets, except sysctls):
    sysctl     every writable /proc/sys value but the few the kernel changes on its own
    iptables   iptables-save and ip6tables-save per table, counters dropped, a built-in chain
               with policy ACCEPT and no rule left out (so a flushed table equals an absent one)
    nft        nftables tables (`nft list tables`, when nft is installed): iptables-nft leaves
               the tables it created behind, empty, after a flush
    mounts     /proc/mounts as "mountpoint fstype source"
    cgroups    every directory under /sys/fs/cgroup but IGNORED_CGROUPS (the machine's own)
    listeners  listening sockets owned by a node process (NODE_PROCESSES) or bound to the node
               IP; other listeners (other tests' control planes on random ports) are not ours
    processes  live processes named in NODE_PROCESSES or whose command line names the
               cluster's state directory
    links      network interfaces (name and kind); addresses and routes of the host namespace
    paths      which of WATCHED_PATHS exist (what a kubelet, containerd, CNI or iptables create)

restore writes back the sysctls that differ, restores each changed iptables table from BEFORE
(flushes a table that was empty), deletes the nftables tables that were not there, kills
leftover node processes, unmounts new mounts (deepest first), deletes new interfaces, removes
new cgroup directories (deepest first) and removes the watched paths that did not exist before.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

NODE_PROCESSES = frozenset({
    "kubelet", "kube-proxy", "containerd", "containerd-shim", "containerd-shim-runc-v2",
})
WATCHED_PATHS = (
    "/run/containerd", "/var/lib/containerd", "/run/netns", "/var/lib/cni", "/run/cni",
    "/etc/cni", "/opt/cni", "/var/log/containers", "/var/log/pods", "/var/lib/kubelet",
    "/etc/kubernetes", "/var/run/kubernetes", "/run/xtables.lock", "/run/runc",
    "/var/lib/containers", "/run/containers", "/var/lib/kube-proxy", "/run/mount",
    "/opt/containerd",
)
VOLATILE_SYSCTLS = re.compile(
    r"^(kernel\.ns_last_pid|kernel\.random\..*|fs\.dentry-state|fs\.file-nr|fs\.inode-.*"
    r"|kernel\.pty\.nr|net\.netfilter\.nf_conntrack_count|kernel\.perf_event_max_sample_rate"
    r"|fs\.quota\..*|kernel\.tainted|vm\.stat_refresh|net\.ipv4\.route\.flush"
    r"|net\.ipv6\.route\.flush|vm\.drop_caches|vm\.compact_memory)$"
)
# The cgroups this machine's own process runner makes and removes per command, whatever runs:
# not the node's (PYCTRL_HOSTSTATE_IGNORE_CGROUPS, a regular expression, replaces it).
IGNORED_CGROUPS = re.compile(
    os.environ.get("PYCTRL_HOSTSTATE_IGNORE_CGROUPS", r"/process_api(/|$)"))
STATE_DIR = os.environ.get("PYCTRL_CLUSTER_DIR", "/var/lib/pyctrl-cluster")
NODE_IP = os.environ.get("PYCTRL_NODE_IP", "192.0.2.10")


def _run(*cmd: str) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
    except FileNotFoundError:
        return ""


def sysctls() -> dict[str, str]:
    out: dict[str, str] = {}
    for dirpath, _dirs, files in os.walk("/proc/sys"):
        for name in files:
            path = os.path.join(dirpath, name)
            key = path[len("/proc/sys/"):].replace("/", ".")
            if VOLATILE_SYSCTLS.match(key) or not os.stat(path).st_mode & 0o200:
                continue
            try:
                with open(path) as f:
                    out[key] = " ".join(f.read().split())
            except OSError:
                continue
    return out


def iptables() -> list[str]:
    items: list[str] = []
    for family, tool in (("ipv4", "iptables-save"), ("ipv6", "ip6tables-save")):
        table = ""
        for line in _run(tool).splitlines():
            if line.startswith("*"):
                table = line[1:]
            elif line.startswith(":"):
                name, policy = line[1:].split()[:2]
                if policy == "-":  # user chain
                    items.append(f"{family} {table} chain {name}")
                elif policy != "ACCEPT":
                    items.append(f"{family} {table} policy {name} {policy}")
            elif line.startswith("-A"):
                items.append(f"{family} {table} rule {line}")
    return items


def nft_tables() -> list[str]:
    """``nft list tables`` (empty without nft): iptables-nft creates a table on first use and
    leaves it, empty, when flushed."""
    return [line.strip() for line in _run("nft", "list", "tables").splitlines() if line.strip()]


def mounts() -> list[str]:
    with open("/proc/mounts") as f:
        return [" ".join((p[1], p[2], p[0])) for p in (line.split() for line in f)]


def cgroups() -> list[str]:
    return [dirpath for dirpath, _d, _f in os.walk("/sys/fs/cgroup")
            if not IGNORED_CGROUPS.search(dirpath)]


def _proc_name(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _ours(pid: str) -> bool:
    if _proc_name(pid) in NODE_PROCESSES:
        return True
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return STATE_DIR.encode() in cmdline


def processes() -> list[str]:
    return [f"{pid} {_proc_name(pid)}" for pid in os.listdir("/proc")
            if pid.isdigit() and pid != str(os.getpid()) and _ours(pid)]


def listeners() -> list[str]:
    items = []
    for line in _run("ss", "-Hltnup").splitlines():
        fields = line.split()
        if len(fields) < 5:
            continue
        proto, local = fields[0], fields[4]
        pids = re.findall(r"pid=(\d+)", line)
        names = re.findall(r'\("([^"]+)"', line)
        if local.startswith(NODE_IP + ":") or any(_ours(p) for p in pids) \
                or any(n in NODE_PROCESSES for n in names):
            items.append(f"{proto} {local} {','.join(sorted(set(names)))}")
    return items


def links() -> list[str]:
    items = []
    for link in json.loads(_run("ip", "-j", "-d", "link", "show") or "[]"):
        kind = link.get("linkinfo", {}).get("info_kind", "")
        items.append(f"link {link['ifname']} {kind}")
    for addr in json.loads(_run("ip", "-j", "addr", "show") or "[]"):
        for info in addr.get("addr_info", []):
            items.append(f"addr {addr['ifname']} {info.get('local')}/{info.get('prefixlen')}")
    for family in ("-4", "-6"):
        for route in _run("ip", family, "route", "show", "table", "all").splitlines():
            items.append(f"route {route.strip()}")
    return items


def paths() -> list[str]:
    return [p for p in WATCHED_PATHS if os.path.lexists(p)]


def snapshot() -> dict[str, Any]:
    return {
        "sysctl": sysctls(), "iptables": iptables(), "nft": nft_tables(), "mounts": mounts(),
        "cgroups": cgroups(),
        "listeners": listeners(), "processes": processes(), "links": links(),
        "paths": paths(),
    }


def differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    out = []
    b_sys, a_sys = before["sysctl"], after["sysctl"]
    for key in sorted(set(b_sys) | set(a_sys)):
        if b_sys.get(key) != a_sys.get(key):
            out.append(f"sysctl {key}: {b_sys.get(key)!r} -> {a_sys.get(key)!r}")
    for section in ("iptables", "nft", "mounts", "cgroups", "listeners", "processes", "links",
                    "paths"):
        b, a = set(before.get(section, [])), set(after.get(section, []))
        if section == "cgroups":  # also for a record taken with another IGNORED_CGROUPS
            b = {d for d in b if not IGNORED_CGROUPS.search(d)}
            a = {d for d in a if not IGNORED_CGROUPS.search(d)}
        out += [f"{section} -{item}" for item in sorted(b - a)]
        out += [f"{section} +{item}" for item in sorted(a - b)]
    return out


def _kill_leftovers() -> None:
    pids = [int(p.split()[0]) for p in processes()]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in pids):
            time.sleep(0.1)


def _restore_iptables(before: dict[str, Any]) -> None:
    for family, save, restore in (("ipv4", "iptables-save", "iptables-restore"),
                                  ("ipv6", "ip6tables-save", "ip6tables-restore")):
        now = _run(save)
        tables = {line[1:] for line in now.splitlines() if line.startswith("*")}
        wanted = [i for i in before["iptables"] if i.startswith(family + " ")]
        current = [i for i in iptables() if i.startswith(family + " ")]
        if sorted(wanted) == sorted(current):
            continue
        # Rebuild every table from BEFORE's items: a table absent there is restored empty.
        blocks = []
        for table in sorted(tables):
            lines = [f"*{table}"]
            builtin = [m.group(1) for m in re.finditer(
                rf"^\*{table}\n((?::\S+ \S+ .*\n)*)", now + "\n", re.M)]
            for line in (builtin[0].splitlines() if builtin else []):
                name, policy = line[1:].split()[:2]
                if policy != "-":
                    kept = [i for i in wanted if i.startswith(f"{family} {table} policy {name} ")]
                    lines.append(f":{name} {kept[0].split()[-1] if kept else 'ACCEPT'} [0:0]")
            for item in wanted:
                if item.startswith(f"{family} {table} chain "):
                    lines.append(f":{item.split()[-1]} - [0:0]")
            for item in wanted:
                if item.startswith(f"{family} {table} rule "):
                    lines.append(item.split(" rule ", 1)[1])
            lines.append("COMMIT")
            blocks.append("\n".join(lines))
        subprocess.run([restore], input="\n".join(blocks) + "\n", text=True, check=False)


def restore(before: dict[str, Any]) -> None:
    _kill_leftovers()
    now = snapshot()
    for key, value in before["sysctl"].items():
        if now["sysctl"].get(key, value) != value:
            try:
                Path("/proc/sys/" + key.replace(".", "/")).write_text(value)
            except OSError as e:
                print(f"hoststate: cannot restore sysctl {key}: {e}", file=sys.stderr)
    _restore_iptables(before)
    for table in sorted(set(nft_tables()) - set(before.get("nft", []))):
        subprocess.run(["nft", "delete", *table.split()], check=False)
    old_mounts = {m.split()[0] for m in before["mounts"]}
    for mountpoint in sorted({m.split()[0] for m in mounts()} - old_mounts,
                             key=len, reverse=True):
        if subprocess.run(["umount", mountpoint], capture_output=True,
                          check=False).returncode != 0:
            subprocess.run(["umount", "-l", mountpoint], check=False)
    old_links = {item.split()[1] for item in before["links"] if item.startswith("link ")}
    for item in links():
        if item.startswith("link ") and item.split()[1] not in old_links:
            subprocess.run(["ip", "link", "delete", item.split()[1]],
                           capture_output=True, check=False)
    for directory in sorted(set(cgroups()) - set(before["cgroups"]), key=len, reverse=True):
        try:
            os.rmdir(directory)
        except OSError as e:
            print(f"hoststate: cannot remove cgroup {directory}: {e}", file=sys.stderr)
    for path in sorted(set(paths()) - set(before["paths"])):
        subprocess.run(["rm", "-rf", "--one-file-system", path], check=False)


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "save":
        Path(argv[1]).write_text(json.dumps(snapshot(), indent=0, sort_keys=True))
        return 0
    if len(argv) in (2, 3) and argv[0] == "diff":
        before = json.loads(Path(argv[1]).read_text())
        after = json.loads(Path(argv[2]).read_text()) if len(argv) == 3 else snapshot()
        diff = differences(before, after)
        print("\n".join(diff))
        return 1 if diff else 0
    if len(argv) == 2 and argv[0] == "restore":
        before = json.loads(Path(argv[1]).read_text())
        restore(before)
        diff = differences(before, snapshot())
        if diff:
            print("hoststate: left after restore:\n  " + "\n  ".join(diff), file=sys.stderr)
        return 1 if diff else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
