"""Celery for Superset, as the Strata operator runs it.

superset_config.py imports redis_url, redis_client, redis_options and redis_tls from
here: the Redis URLs and TLS settings are built from the environment, where the password or the whole URL comes from its Secret,
so no secret is ever written in a file.

The worker and beat containers start through this file:

    python strata_celery.py run <broker-database> celery --app=... worker ...

waits for Redis to answer, then replaces itself with the command, so Celery is the
container's process and gets the SIGTERM of a pod deletion: a worker then stops taking
tasks and finishes those it runs (Celery's warm shutdown). A Redis that does not answer
within a minute stops the container with the reason BrokerUnreachable (or
BrokerAuthenticationFailed) in the termination log, which the operator reports as
Degraded; the message names the host and port, never the password.

    python strata_celery.py ping <broker-database>

is the worker's probe: it succeeds when this pod's worker answers Celery's ping through
the broker, so a worker is Ready only once it takes tasks.
"""

import os
import socket
import ssl
import sys
import time
from urllib.parse import quote, urlsplit

TERMINATION_LOG = os.environ.get("TERMINATION_LOG", "/dev/termination-log")
WAIT_SECONDS = 60


def log(message):
    print(f"strata-celery: {message}", file=sys.stderr, flush=True)


def stop(reason, message):
    try:
        with open(TERMINATION_LOG, "w", encoding="utf-8") as out:
            out.write(f"{reason}\n{message}\n")
    except OSError as error:
        log(f"cannot write the termination log: {error}")
    log(f"stop: {reason}: {message}")
    sys.exit(1)


def tls_wanted():
    """Whether clusterConfig.redis.tls is set."""
    return os.environ.get("STRATA_REDIS_TLS") == "true"


def redis_base():
    """The Redis URL without a database: the Secret's URL, or host, port and password
    (rediss:// with clusterConfig.redis.tls).

    A URL that does not parse, that holds a database, path, query or fragment, or that
    is redis:// while clusterConfig.redis.tls is set, stops the container with
    InvalidRedisUrl; the message never repeats the URL, which holds the password.
    """
    url = os.environ.get("STRATA_REDIS_URL")
    if url is None:
        host = os.environ["STRATA_REDIS_HOST"]
        port = os.environ["STRATA_REDIS_PORT"]
        # A Secret made from a file often ends in a line break the password lacks.
        password = os.environ.get("STRATA_REDIS_PASSWORD", "").rstrip("\r\n")
        credentials = f":{quote(password, safe='')}@" if password else ""
        scheme = "rediss" if tls_wanted() else "redis"
        return f"{scheme}://{credentials}{host}:{port}"
    url = url.strip()
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        parts = None
    if (
        parts is None
        or parts.scheme not in ("redis", "rediss")
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
    ):
        stop(
            "InvalidRedisUrl",
            "the key url of clusterConfig.redis.urlSecret is not redis://[[user]:password@]"
            "host:port or rediss://... without a database, path or query (a password "
            "with / # ? or @ must be percent-encoded); the URL is not repeated here, it "
            "holds the password",
        )
    if tls_wanted() and parts.scheme != "rediss":
        stop(
            "InvalidRedisUrl",
            "clusterConfig.redis.tls is set, but the key url of clusterConfig.redis."
            "urlSecret is redis://, which never uses TLS: make it rediss://",
        )
    return url.rstrip("/")


def redis_url(database):
    return f"{redis_base()}/{database}"


def redis_options():
    """redis-py's TLS settings beyond a rediss:// URL's own (which checks the server's
    certificate and name): the CA of clusterConfig.redis.tls.caCertificate, or the
    image's trust store without one."""
    ca = os.environ.get("STRATA_REDIS_CA_FILE")
    if ca and redis_base().startswith("rediss://"):
        return {"ssl_ca_certs": ca}
    return {}


def redis_tls():
    """Celery's TLS settings for a rediss:// URL: the server's certificate is checked
    against the CA of clusterConfig.redis.tls, or the image's trust store. kombu would
    otherwise take a rediss:// broker without a check, and Celery's results backend
    would refuse to start."""
    if redis_base().startswith("rediss://"):
        return {"ssl_cert_reqs": ssl.CERT_REQUIRED, **redis_options()}
    return None


def redis_client(database):
    import redis

    return redis.Redis.from_url(redis_url(database), **redis_options())


def where():
    """Host and port of the Redis, for messages: never its credentials."""
    parts = urlsplit(redis_base())
    return f"{parts.hostname}:{parts.port or 6379}"


def wait_for_redis(database):
    import redis

    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        try:
            redis.Redis.from_url(
                redis_url(database),
                socket_connect_timeout=5,
                socket_timeout=5,
                **redis_options(),
            ).ping()
            log(f"Redis at {where()} answers")
            return
        except redis.AuthenticationError as error:
            stop(
                "BrokerAuthenticationFailed",
                f"Redis at {where()} refused the credentials of clusterConfig.redis "
                f"({error}): check the password or URL in its Secret",
            )
        except (redis.RedisError, OSError) as error:
            if time.monotonic() > deadline:
                stop(
                    "BrokerUnreachable",
                    f"Redis at {where()} did not answer for {WAIT_SECONDS} s ({error}): "
                    "check clusterConfig.redis, and that Redis runs and admits this pod",
                )
            time.sleep(2)


def ping(database):
    """Exits 0 when this pod's worker answers; 1, silently, on any failure, so no
    error text (which could hold a URL) reaches the probe's Event."""
    try:
        from celery import Celery

        app = Celery(broker=redis_url(database))
        app.conf.broker_use_ssl = redis_tls()
        replies = app.control.ping(
            destination=[f"celery@{socket.gethostname()}"], timeout=5.0
        )
    except Exception:  # noqa: BLE001 - the probe's answer is its exit code
        sys.exit(1)
    sys.exit(0 if replies else 1)


def main(argv):
    if len(argv) == 2 and argv[0] == "ping":
        ping(int(argv[1]))
    if len(argv) >= 3 and argv[0] == "run":
        wait_for_redis(int(argv[1]))
        command = argv[2:]
        os.execvp(command[0], command)
    stop("InvalidCommand", f"strata_celery.py: unknown arguments {argv}")


if __name__ == "__main__":
    main(sys.argv[1:])
