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


def die_with_parent():
    """In a server's child before exec: killed when the test dies (a
    ctest time limit), so no server outlives its test."""
    import ctypes
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)


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
        # the sessions' HOME: the "remote" is this very machine, and its
        # shell must not run the user's startup files (a pyenv rehash
        # killed with the server would leave its lock for every later
        # login to wait on)
        os.makedirs(k + "/home", exist_ok=True)
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
                    "PubkeyAuthentication yes\nSetEnv HOME=%s\n"
                    % (self.port, k, k, k, k + "/home"))
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
            start_new_session=True, preexec_fn=die_with_parent)
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


class Slurm:
    """munged, slurmctld and slurmd on loopback, all in `tmp`: one node
    (this host) in partition 'kltest' offering two GPUs (character
    devices standing in: nothing here runs CUDA). env: SLURM_CONF for the
    clients. Needs root (slurmd starts jobs as their users)."""

    def __init__(self, tmp):
        self.dir = tmp + "/slurm"
        self.procs = []
        d = self.dir
        for sub in ("munge", "state", "spool"):
            os.makedirs(d + "/" + sub, exist_ok=True)
        os.chmod(d + "/munge", 0o700)
        host = socket.gethostname()
        port = free_port()
        with open(d + "/slurm.conf", "w") as f:
            f.write("""ClusterName=kltest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={p1}
SlurmdPort={p2}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d}/munge/munge.sock
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MinJobAge=600
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} Gres=gpu:2 State=UNKNOWN
PartitionName=kltest Nodes={host} Default=YES MaxTime=INFINITE State=UP
""".format(host=host, p1=port, p2=free_port(), d=d, cpus=os.cpu_count()))
        with open(d + "/gres.conf", "w") as f:
            f.write("NodeName=%s Name=gpu File=/dev/null\n"
                    "NodeName=%s Name=gpu File=/dev/zero\n" % (host, host))
        self.env = {"SLURM_CONF": d + "/slurm.conf"}
        self.port = port

    @staticmethod
    def available():
        need = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch",
                "squeue", "scontrol", "scancel")
        return os.geteuid() == 0 and all(
            shutil.which(p) or os.path.exists("/usr/sbin/" + p) for p in need)

    def _start(self, argv, log):
        env = dict(os.environ, **self.env)
        p = subprocess.Popen(argv, stdout=open(self.dir + "/" + log, "a"),
                             stderr=subprocess.STDOUT, env=env,
                             start_new_session=True,
                             preexec_fn=die_with_parent)
        self.procs.append(p)
        return p

    def start(self):
        d = self.dir
        key = d + "/munge/munge.key"
        if not os.path.exists(key):
            subprocess.run(["mungekey", "-c", "-k", key], check=True)
            os.chmod(key, 0o400)
        self._start(["munged", "-F", "-f", "--key-file=" + key,
                     "--socket=" + d + "/munge/munge.sock",
                     "--pid-file=" + d + "/munge/munged.pid",
                     "--log-file=" + d + "/munge/munged.log",
                     "--seed-file=" + d + "/munge/seed"], "munged.out")
        end = time.time() + 20
        while not os.path.exists(d + "/munge/munge.sock"):
            if time.time() > end:
                return False
            time.sleep(0.1)
        self._start(["slurmctld", "-D", "-i", "-f", d + "/slurm.conf"],
                    "slurmctld.out")
        if not wait_port(self.port):
            return False
        self._start(["slurmd", "-D", "-f", d + "/slurm.conf"], "slurmd.out")
        env = dict(os.environ, **self.env)
        end = time.time() + 60
        while time.time() < end:  # the node up and idle
            out = subprocess.run(["sinfo", "-h", "-o", "%t"], env=env,
                                 capture_output=True, text=True).stdout
            if out.strip() == "idle":
                return True
            time.sleep(0.3)
        return False

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                for pid in descendants(p.pid) + [p.pid]:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                p.wait()
        self.procs = []
