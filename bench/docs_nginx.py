"""Debian's `rust-doc` HTML served by nginx on 127.0.0.1: shared by bench/rust-docs,
bench/refresh (through bench/rust-docs) and bench/run's `docs` workload.

ensure_installed() installs rust-doc, nginx and GNU time with apt when missing; Nginx(tmp)
serves DOCS on a free loopback port (ETag and Last-Modified on, as nginx sends them), its
access log off unless a path (and optionally a log_format string) is given.
"""

import os
import shutil
import socket
import subprocess
import sys
import time

DOCS = "/usr/share/doc/rust-doc/html"

# The body bytes each response sent (bench/refresh reads this one).
SENT_FORMAT = "'$status $body_bytes_sent $bytes_sent'"


def log(*a):
    print("[rust-docs]", *a, file=sys.stderr, flush=True)


def missing_packages():
    missing = []
    if not os.path.isdir(os.path.join(DOCS, "std")):
        missing.append("rust-doc")
    if not shutil.which("nginx"):
        missing.append("nginx")
    if not os.access("/usr/bin/time", os.X_OK):
        missing.append("time")
    return missing


def ensure_installed():
    missing = missing_packages()
    if missing:
        log("installing", *missing)
        subprocess.run(["apt-get", "install", "-y", "-qq"] + missing, check=True,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        # Debian starts the packaged nginx on port 80; these scripts run their own.
        subprocess.run(["service", "nginx", "stop"], capture_output=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """nginx on 127.0.0.1 serving the docs (ETag and Last-Modified on, as nginx does)."""

    def __init__(self, tmp, access_log=None, log_format=SENT_FORMAT):
        self.port = free_port()
        logging = (f"log_format bench {log_format};\n"
                   f"    access_log {access_log} bench;") if access_log else "access_log off;"
        conf = os.path.join(tmp, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""
worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log;
events {{ worker_connections 1024; }}
http {{
    include /etc/nginx/mime.types;
    {logging}
    keepalive_requests 100000;
    server {{
        listen 127.0.0.1:{self.port};
        root {DOCS};
    }}
}}
""")
        self.p = subprocess.Popen(["nginx", "-c", conf, "-p", tmp], stderr=subprocess.DEVNULL)
        time.sleep(0.5)

    def stop(self):
        self.p.terminate()
        self.p.wait(10)
