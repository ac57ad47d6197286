"""Real servers on loopback for the executor tests, started and stopped by
the test itself: OpenSSH's sshd with a throwaway host key and user key,
and a one-node Slurm (munged, slurmctld, slurmd) whose node offers two
GPUs by count. Each start returns None when the machine lacks the
programs (the test then skips)."""
import getpass
import os
import shutil
import signal
import socket
import subprocess
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, seconds=20):
    end = time.time() + seconds
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def descendants(root):
    """Every process below `root`, from /proc."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


class Sshd:
    """sshd -D on 127.0.0.1:port; an ssh config file naming it 'kltest'."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.proc = None
        self.port = free_port()
        self.sshd = shutil.which("sshd") or "/usr/sbin/sshd"
        k = tmp + "/ssh"
        os.makedirs(k, exist_ok=True)
        os.chmod(k, 0o700)
        for name in ("host_key", "user_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "",
                            "-f", k + "/" + name], check=True)
        shutil.copy(k + "/user_key.pub", k + "/authorized_keys")
        os.chmod(k + "/authorized_keys", 0o600)
        with open(k + "/sshd_config", "w") as f:
            f.write("Port %d\nListenAddress 127.0.0.1\nHostKey %s/host_key\n"
                    "AuthorizedKeysFile %s/authorized_keys\nPidFile %s/pid\n"
                    "StrictModes no\nUsePAM no\nPasswordAuthentication no\n"
                    "KbdInteractiveAuthentication no\nPermitRootLogin yes\n"
                    "PubkeyAuthentication yes\n"
                    % (self.port, k, k, k))
        self.config = k + "/ssh_config"
        with open(self.config, "w") as f:
            f.write("Host kltest\n  HostName 127.0.0.1\n  Port %d\n"
                    "  User %s\n  IdentityFile %s/user_key\n"
                    "  IdentitiesOnly yes\n  UserKnownHostsFile %s/known\n"
                    "  StrictHostKeyChecking no\n  LogLevel ERROR\n"
                    % (self.port, getpass.getuser(), k, k))
        self.sshd_config = k + "/sshd_config"

    def start(self):
        if os.geteuid() == 0:
            os.makedirs("/run/sshd", exist_ok=True)
        self.proc = subprocess.Popen(
            [self.sshd, "-D", "-e", "-f", self.sshd_config],
            stderr=open(self.tmp + "/ssh/sshd.log", "a"),
            start_new_session=True)
        return wait_port(self.port)

    def stop(self):
        """The listener and every connection it serves, at once: sshd's
        per-connection processes leave its process group, so they are
        found as its descendants."""
        if not self.proc or self.proc.poll() is not None:
            self.proc = None
            return
        family = descendants(self.proc.pid) + [self.proc.pid]
        for pid in family:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self.proc.wait()
        self.proc = None

    @staticmethod
    def available():
        return bool((shutil.which("sshd") or os.path.exists("/usr/sbin/sshd"))
                    and shutil.which("ssh") and shutil.which("ssh-keygen"))
