"""The Superset pod's init container: brings the metadata database up to date and
creates the admin user, before the web server starts.

Steps, each a `superset` command exactly as an operator of Superset runs it:
  1. `superset db upgrade`            (reason DatabaseUpgradeFailed)
  2. `superset init`                  (reason SupersetInitFailed)
  3. `superset fab create-admin ...`  (reason AdminCreationFailed), only when the
     STRATA_ADMIN_* variables are set. It exits 0 and changes nothing when the user
     exists, so a later password change in the Secret is not applied here.

Pods of a StatefulSet with OrderedReady start one at a time, so two pods do not run
these steps at once during a rollout. On PostgreSQL the steps also hold a session
advisory lock, so two pods restarted together (a lost node) wait for each other.

A failed step writes its reason and one sentence to the termination log (the operator
reports them as Degraded) and exits 1; the output of the command is in the log.
"""

import os
import subprocess
import sys

TERMINATION_LOG = os.environ.get("TERMINATION_LOG", "/dev/termination-log")
# An arbitrary, fixed key that every Strata Superset pod locks on.
ADVISORY_LOCK_KEY = 7313_2024


def log(message):
    print(f"init-database: {message}", flush=True)


def stop(reason, message):
    try:
        with open(TERMINATION_LOG, "w", encoding="utf-8") as out:
            out.write(f"{reason}\n{message}\n")
    except OSError as error:
        log(f"cannot write the termination log: {error}")
    log(f"stop: {reason}: {message}")
    sys.exit(1)


def run(step, reason, args):
    log(f"{step}: superset {' '.join(args[:2])} ...")
    result = subprocess.run(["superset", *args], check=False)
    if result.returncode != 0:
        stop(
            reason,
            f"'superset {' '.join(args[:2])}' exited {result.returncode}; its output is in "
            "the log of the init-database container",
        )
    log(f"{step}: done")


def advisory_lock():
    """A connection holding the lock while it lives, or None off PostgreSQL."""
    uri = os.environ.get("SUPERSET__SQLALCHEMY_DATABASE_URI")
    if uri is None:
        sys.path.insert(0, os.path.dirname(os.environ.get("SUPERSET_CONFIG_PATH", "")))
        try:
            import superset_config  # noqa: PLC0415

            uri = getattr(superset_config, "SQLALCHEMY_DATABASE_URI", None)
        except Exception as error:  # noqa: BLE001
            stop("ConfigInvalid", f"superset_config.py cannot be loaded: {error}")
    if not uri or not uri.startswith("postgresql"):
        return None
    try:
        from sqlalchemy import create_engine, text  # noqa: PLC0415

        connection = create_engine(uri).connect()
        log("waiting for the database advisory lock")
        connection.execute(text(f"SELECT pg_advisory_lock({ADVISORY_LOCK_KEY})"))
        return connection
    except Exception as error:  # noqa: BLE001
        stop(
            "DatabaseUnreachable",
            f"the metadata database does not answer ({type(error).__name__}); check "
            "metadataDatabase and its Secret",
        )
    return None


def main():
    lock = advisory_lock()
    run("1/3", "DatabaseUpgradeFailed", ["db", "upgrade"])
    run("2/3", "SupersetInitFailed", ["init"])
    admin = os.environ.get("STRATA_ADMIN_USERNAME")
    if admin:
        run(
            "3/3",
            "AdminCreationFailed",
            [
                "fab",
                "create-admin",
                "--username",
                admin,
                "--firstname",
                os.environ.get("STRATA_ADMIN_FIRSTNAME", "Superset"),
                "--lastname",
                os.environ.get("STRATA_ADMIN_LASTNAME", "Admin"),
                "--email",
                os.environ.get("STRATA_ADMIN_EMAIL", "admin@example.com"),
                "--password",
                os.environ["STRATA_ADMIN_PASSWORD"],
            ],
        )
    else:
        log("3/3: no adminUser, no admin created")
    if lock is not None:
        lock.close()


if __name__ == "__main__":
    main()
