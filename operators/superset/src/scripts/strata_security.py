"""Superset's security manager with a rate-limited login API, shipped by the Strata
operator.

Flask-AppBuilder limits its login form (``AUTH_RATE_LIMIT``, Superset's default "5 per
second" for each client address) but not its login API, ``POST
/api/v1/security/login``, which takes the same passwords, database or LDAP, as JSON:
a password guesser would only meet Flask-Limiter's application-wide limit, 50 requests
a second. This manager registers the same API with the form's limit on its POSTs (the
login and the token refresh). Every POST counts, not only refusals: a limit counted
after the answer lets as many guesses through as the server answers at once.

The API class keeps Flask-AppBuilder's name, ``SecurityApi``, so its endpoints and
blueprint are the ones clients and Superset know.
"""

from flask import current_app
from flask_appbuilder.security.api import SecurityApi as LoginApi
from flask_appbuilder.utils.limit import Limit
from flask_limiter.util import get_remote_address
from superset.security import SupersetSecurityManager


def auth_rate_limit():
    """The login form's limit, read per request, so an override of AUTH_RATE_LIMIT
    applies to both."""
    return current_app.config["AUTH_RATE_LIMIT"]


class SecurityApi(LoginApi):
    """Flask-AppBuilder's login API, with the login form's rate limit."""

    limits = [
        Limit(
            limit_value=auth_rate_limit,
            key_func=get_remote_address,
            methods=("POST",),
        )
    ]


class StrataSecurityManager(SupersetSecurityManager):
    """Superset's security manager, with the rate-limited login API."""

    security_api = SecurityApi
