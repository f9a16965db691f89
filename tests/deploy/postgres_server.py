"""A real PostgreSQL for the deploy tests, from Debian's packages (the Python twin of
tests/server/postgres_server.h): initdb in a folder of the caller's, the postmaster on a free loopback
port, run as the postgres user when we are root (PostgreSQL refuses root). stop() takes it away (SIGINT:
fast shutdown; SIGKILL: the postmaster dies) and start() brings it back on the same port with the same
data: a database outage."""
import glob, os, pwd, shutil, signal, subprocess, time

from replicas_test import free_port


def postgres_bin():
    """The newest installed server's bin folder, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(p.split("/")[4]))
    return os.path.dirname(found[-1]) if found else None


def as_postgres():
    """preexec_fn that drops root to the postgres user."""
    if os.geteuid() != 0:
        return None
    pw = pwd.getpwnam("postgres")

    def drop():
        os.setgroups([])
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)
    return drop


class Postgres:
    def __init__(self, bin_dir, folder, settings=("fsync=off",)):
        self.bin, self.folder, self.settings = bin_dir, folder, settings
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(folder, pw.pw_uid, pw.pw_gid)
        self.log = open(f"{folder}/postgres.log", "a")
        subprocess.run([f"{bin_dir}/initdb", "-D", f"{folder}/data", "-U", "qvl", "--auth=trust", "-E", "UTF8",
                        "--no-sync"], check=True, stdout=self.log, stderr=self.log, preexec_fn=as_postgres())
        self.port = free_port()
        self.proc = None
        self.start()

    def url(self, database="postgres"):
        return f"postgresql://qvl@127.0.0.1:{self.port}/{database}"

    def ready(self):
        return subprocess.run([f"{self.bin}/pg_isready", "-q", "-h", "127.0.0.1", "-p", str(self.port)]).returncode == 0

    def start(self, seconds=30):
        """Starts the postmaster; once it answers. After a SIGKILL its orphaned backends may hold the old
        shared memory a moment longer: a start that exits is tried again."""
        end = time.time() + seconds
        while True:
            args = [f"{self.bin}/postgres", "-D", f"{self.folder}/data", "-k", self.folder, "-h", "127.0.0.1",
                    "-p", str(self.port)]
            for s in self.settings:
                args += ["-c", s]
            self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log, preexec_fn=as_postgres())
            while not self.ready():
                if self.proc.poll() is not None:
                    break
                if time.time() > end:
                    raise SystemExit("postgres: did not answer:\n" + open(f"{self.folder}/postgres.log").read())
                time.sleep(0.05)
            if self.proc.poll() is None:
                return
            if time.time() > end:
                raise SystemExit("postgres: exited at start:\n" + open(f"{self.folder}/postgres.log").read())
            time.sleep(0.1)

    def stop(self, sig=signal.SIGINT):
        """SIGINT: fast shutdown (clients disconnected, a clean checkpoint); SIGKILL: the postmaster dies
        (its backends end when they notice; the next start recovers from the WAL)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        end = time.time() + 10
        while self.ready() and time.time() < end:
            time.sleep(0.05)

    def sql(self, statement, database="postgres"):
        """One statement through psql; its rows as lists of text fields."""
        out = subprocess.run([f"{self.bin}/psql", "-X", "-At", "-F", "\t", "-h", "127.0.0.1", "-p", str(self.port),
                              "-U", "qvl", "-d", database, "-c", statement], check=True, capture_output=True, text=True)
        return [line.split("\t") for line in out.stdout.splitlines() if line]


def tear_down(procs, pg, *folders):
    """Ends a test's processes (SIGTERM, then SIGKILL after 20 s), its PostgreSQL (fast shutdown) and
    its folders."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
    if pg is not None:
        pg.stop(signal.SIGINT)
    for f in folders:
        shutil.rmtree(f, ignore_errors=True)
