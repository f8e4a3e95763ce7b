"""The Superset pod's init container: brings the metadata database up to date and
creates the admin user, before the web server starts.

Steps, each what a `superset` command does, all in this one process on one Flask app
(creating the app imports all of Superset, about 6 CPU-seconds, which each command paid
again in a process of its own):
  1. `superset db upgrade`            (reason DatabaseUpgradeFailed), through
     Superset's own CLI group, so exactly Superset's and Flask-Migrate's code runs
  2. during a SECRET_KEY rotation (STRATA_PREVIOUS_SECRET_KEY set): what
     `superset re-encrypt-secrets` does, through Superset's SecretsMigrator in this
     process, so neither key is on a command line (reason SecretKeyRotationFailed).
     Values the current key already reads are left alone, so every pod may run it.
     (`superset re-encrypt-secrets` itself reads PREVIOUS_SECRET_KEY from the config
     or its option only, never from the environment.)
  3. `superset init`                  (reason SupersetInitFailed), the same way
  4. the admin user (reason AdminCreationFailed), only when the STRATA_ADMIN_*
     variables are set: what `superset fab create-admin` does, through Flask-AppBuilder's
     security manager in this process, so the password is never on a command line
     (which every process of the pod can read in /proc). It changes nothing when the
     user exists, so a later password change in the Secret is not applied here.
  5. the Trino connections (STRATA_TRINO_CONNECTIONS), each a Superset database
     built from its Trino's discovery ConfigMap, mounted as files: created, or its
     URI, password and TLS settings brought up to date; the rest of its settings (and
     of its `extra`) are the user's and stay. The password goes through Superset's
     model, which encrypts it with SECRET_KEY, and never onto a command line. Reasons:
     TrinoDriverMissing, TrinoDiscoveryInvalid, TrinoConnectionFailed.

Pods of a StatefulSet with OrderedReady start one at a time, so two pods do not run
these steps at once during a rollout. On PostgreSQL the steps also hold a session
advisory lock, so two pods restarted together (a lost node) wait for each other. The
lock's connection is in autocommit mode: inside a transaction it would stay "idle in
transaction" for the whole migration, and a server's
idle_in_transaction_session_timeout would end the session and silently free the lock.

A database that cannot be reached is DatabaseUnreachable; a driver that is not in the
image (a URI naming a dialect or DBAPI module that is not installed) is
DatabaseDriverMissing, so the message does not blame the database.

A failed step writes its reason and one sentence to the termination log (the operator
reports them as Degraded) and exits 1; the output of the command is in the log.
"""

import functools
import json
import os
import sys
import traceback

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


@functools.cache
def superset_app():
    """The one Flask app every step runs in, created on first use.

    Alembic's env.py would otherwise load alembic.ini's logging configuration during
    the upgrade, which disables every logger that exists by then: Flask-AppBuilder's
    own reason for refusing the admin user would be missing from the log. Its lines
    go through Superset's logging configuration instead."""
    from superset.app import create_app  # noqa: PLC0415

    app = create_app()
    app.config["ALEMBIC_SKIP_LOG_CONFIG"] = True
    return app


def run(step, reason, args):
    """`superset <args>` through Superset's CLI group, in this process, on its app."""
    command = f"superset {' '.join(args)}"
    log(f"{step}: {command} ...")
    try:
        from flask.cli import ScriptInfo  # noqa: PLC0415
        from superset.cli.main import superset  # noqa: PLC0415

        app = superset_app()
        code = superset.main(
            args=args,
            prog_name="superset",
            standalone_mode=False,
            obj=ScriptInfo(create_app=lambda: app),
        )
    except SystemExit as exit_:
        code = exit_.code
    except Exception as error:  # noqa: BLE001
        traceback.print_exc()
        stop(
            reason,
            f"'{command}' failed ({type(error).__name__}); its output is in the log of "
            "the init-database container",
        )
    if code not in (None, 0):
        stop(
            reason,
            f"'{command}' exited {code}; its output is in the log of the init-database "
            "container",
        )
    log(f"{step}: done")


def advisory_lock():
    """A connection holding the lock while it lives, or None off PostgreSQL. Any
    database is reached once first, so a missing driver or an unreachable database is
    named before a migration starts."""
    uri = os.environ.get("SUPERSET__SQLALCHEMY_DATABASE_URI")
    if uri is None:
        sys.path.insert(0, os.path.dirname(os.environ.get("SUPERSET_CONFIG_PATH", "")))
        try:
            import superset_config  # noqa: PLC0415

            uri = getattr(superset_config, "SQLALCHEMY_DATABASE_URI", None)
        except Exception as error:  # noqa: BLE001
            stop("ConfigInvalid", f"superset_config.py cannot be loaded: {error}")
    if not uri:
        return None
    try:
        from sqlalchemy import create_engine, text  # noqa: PLC0415
        from sqlalchemy.exc import NoSuchModuleError  # noqa: PLC0415
    except ImportError as error:
        stop(
            "ConfigInvalid",
            f"SQLAlchemy cannot be imported ({error}); the image is not a Superset image",
        )
    try:
        engine = create_engine(uri, isolation_level="AUTOCOMMIT")
    except (ImportError, NoSuchModuleError) as error:
        driver_missing(error)
    except Exception as error:  # noqa: BLE001
        stop(
            "ConfigInvalid",
            f"the metadata database URI is not usable ({type(error).__name__}); check "
            "metadataDatabase",
        )
    try:
        connection = engine.connect()
        if not uri.startswith("postgresql"):
            connection.close()
            return None
        log("waiting for the database advisory lock")
        connection.execute(text(f"SELECT pg_advisory_lock({ADVISORY_LOCK_KEY})"))
        return connection
    except ImportError as error:
        driver_missing(error)
    except Exception as error:  # noqa: BLE001
        check = "metadataDatabase and its Secret"
        if "SSL" in type(error).__name__:
            check = (
                "metadataDatabase.postgresql.tls: the server's certificate must be "
                "signed by its CA and, with verify-full, name the host"
            )
        stop(
            "DatabaseUnreachable",
            f"the metadata database does not answer ({type(error).__name__}); check "
            f"{check}",
        )
    return None


def driver_missing(error):
    """Stops: the URI names a driver the image lacks. The module's name is no secret."""
    stop(
        "DatabaseDriverMissing",
        f"the metadata database's driver is not installed in the image ({error}); keep "
        "metadataDatabase.driver at its default (pg8000, which the operator ships), or "
        "use an image that has the driver the URI names",
    )


def encrypted_columns(metadatas, encrypted_type):
    """table -> {column: type} of every encrypted column in `metadatas`."""
    found = {}
    for metadata in metadatas:
        for table_name, table in metadata.tables.items():
            for column_name, column in table.columns.items():
                if isinstance(column.type, encrypted_type):
                    found.setdefault(table_name, {})[column_name] = column.type
    return found


class UnreadableValue(Exception):
    """A stored value that neither key decrypts."""


def rotate_row(conn, text, table, types, row, previous_key, dialect):
    """Re-encrypts the values of `row` that the current key cannot read but the
    previous one can; returns whether anything changed."""
    from sqlalchemy_utils import EncryptedType  # noqa: PLC0415
    from superset.utils.encrypt import SecretsMigrator  # noqa: PLC0415

    updates = {}
    for name, current in types.items():
        raw = SecretsMigrator._read_bytes(name, row._mapping[name])  # noqa: SLF001
        if raw is None:
            continue
        try:
            current.process_result_value(raw, dialect)
            continue
        except ValueError:
            pass
        previous = EncryptedType(type_in=current.underlying_type, key=previous_key)
        try:
            plain = previous.process_result_value(raw, dialect)
        except ValueError as error:
            raise UnreadableValue(f"{table}.{name} of row {row._mapping['id']}") from error
        updates[name] = current.process_bind_param(plain, dialect)
    if updates:
        assignments = ", ".join(f"{name} = :{name}" for name in updates)
        conn.execute(
            text(f"UPDATE {table} SET {assignments} WHERE id = :id"),  # noqa: S608
            {"id": row._mapping["id"], **updates},
        )
    return bool(updates)


def re_encrypt(previous_key):
    """Step 2: every encrypted value that the current SECRET_KEY cannot read,
    re-encrypted from `previous_key`, in one transaction.

    Superset 6.1.0's own `superset re-encrypt-secrets` (SecretsMigrator) looks for
    encrypted columns in Flask-SQLAlchemy's metadata only, where none of Superset's
    models are (they are Flask-AppBuilder models, with a metadata of their own): it
    finds no column, changes nothing and reports success (seen on the real 6.1.0).
    It also tries the previous key first, and skips a whole row once one of its
    values reads with the current key. This step looks in both metadatas, tries the
    current key first (so a second pod's run changes nothing), and handles each
    value on its own."""
    log("2/5: re-encrypting stored secrets from the previous SECRET_KEY")
    try:
        app = superset_app()
        with app.app_context():
            from flask_appbuilder import Model  # noqa: PLC0415
            from sqlalchemy import text  # noqa: PLC0415
            from sqlalchemy_utils import EncryptedType  # noqa: PLC0415
            from superset import db  # noqa: PLC0415

            columns = encrypted_columns([db.metadata, Model.metadata], EncryptedType)
            if not columns:
                stop(
                    "SecretKeyRotationFailed",
                    "no encrypted column found in Superset's models; this image's "
                    "Superset is not the one the operator knows",
                )
            dialect = db.engine.dialect
            changed = 0
            with db.engine.begin() as conn:
                for table, types in sorted(columns.items()):
                    names = ", ".join(types)
                    rows = conn.execute(
                        text(f"SELECT id, {names} FROM {table}")  # noqa: S608
                    ).fetchall()
                    for row in rows:
                        if rotate_row(conn, text, table, types, row, previous_key, dialect):
                            changed += 1
            log(f"2/5: re-encrypted {changed} row(s) of {', '.join(sorted(columns))}")
    except SystemExit:
        raise
    except UnreadableValue as error:
        stop(
            "SecretKeyRotationFailed",
            f"{error} is readable with neither previousSecretKeySecret's key nor "
            "secretKeySecret's; nothing was re-encrypted",
        )
    except Exception as error:  # noqa: BLE001
        stop(
            "SecretKeyRotationFailed",
            f"re-encrypting the stored secrets failed ({type(error).__name__}); the log "
            "of the init-database container has Superset's output",
        )
    log("2/5: done")


def create_admin(username):
    """Step 4: the admin user, as `superset fab create-admin` creates it."""
    log("4/5: the admin user")
    try:
        app = superset_app()
        with app.app_context():
            security = app.appbuilder.sm
            if security.find_user(username=username) is not None:
                log("4/5: the admin user exists; nothing changed")
                return
            role = security.find_role(security.auth_role_admin)
            user = security.add_user(
                username,
                os.environ.get("STRATA_ADMIN_FIRSTNAME", "Superset"),
                os.environ.get("STRATA_ADMIN_LASTNAME", "Admin"),
                os.environ.get("STRATA_ADMIN_EMAIL", "admin@example.com"),
                role,
                password=os.environ["STRATA_ADMIN_PASSWORD"],
            )
    except Exception as error:  # noqa: BLE001
        stop(
            "AdminCreationFailed",
            f"creating the admin user failed ({type(error).__name__}); the log of the "
            "init-database container has Superset's output",
        )
    if not user:
        stop(
            "AdminCreationFailed",
            "Flask-AppBuilder did not add the admin user (its reason is in the log of the "
            "init-database container); check the adminUser Secret's keys",
        )
    log("4/5: done")


class DiscoveryInvalid(Exception):
    """A discovery ConfigMap without the keys a Trino operator publishes."""


def read_discovery(directory):
    """TRINO_HOST, TRINO_PORT and TRINO_TLS from the mounted discovery ConfigMap."""
    values = {}
    for key in ("TRINO_HOST", "TRINO_PORT", "TRINO_TLS"):
        try:
            with open(os.path.join(directory, key), encoding="utf-8") as source:
                values[key] = source.read().strip()
        except OSError as error:
            raise DiscoveryInvalid(f"{directory} has no {key}") from error
    if not values["TRINO_PORT"].isdigit():
        raise DiscoveryInvalid(f"{directory}: TRINO_PORT is not a port number")
    return values


def trino_settings(index, connection):
    """The connection's URI (with its password) and the client's connect_args."""
    from sqlalchemy.engine import URL  # noqa: PLC0415

    discovery = read_discovery(connection["directory"])
    tls = discovery["TRINO_TLS"] == "true"
    url = URL.create(
        "trino",
        username=os.environ.get(f"STRATA_TRINO_USERNAME_{index}", "superset"),
        password=os.environ.get(f"STRATA_TRINO_PASSWORD_{index}"),
        host=discovery["TRINO_HOST"],
        port=int(discovery["TRINO_PORT"]),
        database=connection.get("catalog"),
    )
    connect_args = {"http_scheme": "https" if tls else "http"}
    if tls:
        connect_args["verify"] = os.path.join(connection["directory"], "ca.crt")
    return url.render_as_string(hide_password=False), connect_args


def updated_extra(extra_json, connect_args):
    """The database's `extra` with the operator's connect_args; the rest stays."""
    extra = json.loads(extra_json or "{}")
    args = extra.setdefault("engine_params", {}).setdefault("connect_args", {})
    args.pop("verify", None)
    args.update(connect_args)
    return json.dumps(extra, sort_keys=True)


def register_trino(connections):
    """Step 5: every Trino connection as a Superset database."""
    log(f"5/5: {len(connections)} Trino connection(s)")
    try:
        import trino.sqlalchemy  # noqa: F401, PLC0415
    except ImportError as error:
        stop(
            "TrinoDriverMissing",
            f"the `trino` Python package is not in the image ({error}); clusterConfig."
            "trinoConnections needs an image that adds it",
        )
    try:
        app = superset_app()
        with app.app_context():
            from superset import db  # noqa: PLC0415
            from superset.models.core import Database  # noqa: PLC0415

            for index, connection in enumerate(connections):
                uri, connect_args = trino_settings(index, connection)
                name = connection["name"]
                database = (
                    db.session.query(Database).filter_by(database_name=name).one_or_none()
                )
                if database is None:
                    database = Database(database_name=name, expose_in_sqllab=True)
                    db.session.add(database)
                    log(f"5/5: {name}: created")
                else:
                    log(f"5/5: {name}: brought up to date")
                database.set_sqlalchemy_uri(uri)
                database.extra = updated_extra(database.extra, connect_args)
            db.session.commit()
    except SystemExit:
        raise
    except DiscoveryInvalid as error:
        stop(
            "TrinoDiscoveryInvalid",
            f"{error}; clusterConfig.trinoConnections must name a Trino cluster's "
            "discovery ConfigMap",
        )
    except Exception as error:  # noqa: BLE001
        stop(
            "TrinoConnectionFailed",
            f"registering the Trino connections failed ({type(error).__name__}); the log "
            "of the init-database container has Superset's output",
        )
    log("5/5: done")


def main():
    lock = advisory_lock()
    run("1/5", "DatabaseUpgradeFailed", ["db", "upgrade"])
    previous_key = os.environ.get("STRATA_PREVIOUS_SECRET_KEY")
    if previous_key:
        re_encrypt(previous_key)
    else:
        log("2/5: no previousSecretKeySecret, nothing to re-encrypt")
    run("3/5", "SupersetInitFailed", ["init"])
    admin = os.environ.get("STRATA_ADMIN_USERNAME")
    if admin:
        create_admin(admin)
    else:
        log("4/5: no adminUser, no admin created")
    connections = json.loads(os.environ.get("STRATA_TRINO_CONNECTIONS", "[]"))
    if connections:
        register_trino(connections)
    else:
        log("5/5: no trinoConnections")
    if lock is not None:
        lock.close()


if __name__ == "__main__":
    main()
