"""TLS to the metadata database, for every connection Superset opens to it.

superset_config.py calls secure_metadata_database() once it knows the database. The
hook is a SQLAlchemy `do_connect` listener on every engine, because Superset's
Alembic environment (`superset db upgrade`) builds its engine from the URI alone and
never sees SQLALCHEMY_ENGINE_OPTIONS. It touches only connections to the metadata
database's host, port and database name, so the user's own databases keep their
settings.

The modes are libpq's `sslmode`:
  - pg8000 (the driver the operator ships) gets an `ssl_context`. With one, pg8000
    refuses a server that does not speak TLS ("Server refuses SSL");
  - a libpq driver (psycopg2, from the image) gets `sslmode` and `sslrootcert`: the
    spec's CA, or with `verify-ca`/`verify-full` and no CA `system`, libpq's name
    (16 and later) for OpenSSL's trust store. libpq would otherwise look for
    `~/.postgresql/root.crt`, which no pod has, and refuse every connection to a
    database with a public certificate.
"""

import ssl

from sqlalchemy import event
from sqlalchemy.engine import Engine


def ssl_context(ssl_mode, ca_file):
    """pg8000's `ssl_context` for `ssl_mode`: False disables TLS."""
    if ssl_mode == "disable":
        return False
    context = ssl.create_default_context(cafile=ca_file)
    if ssl_mode == "require":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif ssl_mode == "verify-ca":
        context.check_hostname = False
    return context


def libpq_root_certificate(ssl_mode, ca_file):
    """libpq's `sslrootcert` for `ssl_mode`: the CA file, `system` when the mode
    verifies and no CA is given, or None (libpq checks nothing then)."""
    if ca_file is not None:
        return ca_file
    if ssl_mode in ("verify-ca", "verify-full"):
        return "system"
    return None


def is_metadata_database(cparams, host, port, database):
    """Whether a connection's parameters point at the metadata database."""
    named = cparams.get("database", cparams.get("dbname"))
    return (
        cparams.get("host") == host
        and int(cparams.get("port") or 5432) == port
        and named == database
    )


def secure_metadata_database(host, port, database, ssl_mode, ca_file=None):
    """Installs the hook; returns the mode, which superset_config.py records."""
    context = ssl_context(ssl_mode, ca_file)

    def on_connect(dialect, _connection_record, _cargs, cparams):
        if dialect.name != "postgresql" or not is_metadata_database(
            cparams, host, port, database
        ):
            return
        if dialect.driver == "pg8000":
            cparams["ssl_context"] = context
        else:
            cparams["sslmode"] = ssl_mode
            root = libpq_root_certificate(ssl_mode, ca_file)
            if root is not None:
                cparams["sslrootcert"] = root

    event.listen(Engine, "do_connect", on_connect)
    return ssl_mode
