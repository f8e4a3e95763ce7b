"""OpenID Connect login for Superset, shipped by the Strata operator.

Flask-AppBuilder 5 reads a user's details only for the providers it names (GitHub,
Google, Keycloak, ...): for any other name, such as the operator's ``oidc``,
``get_oauth_user_info`` raises ``OAuthProviderUnknown`` and every login ends in
"Invalid login". A standard OpenID provider needs no special case: Authlib has
already checked the ID token (signature against the provider's JWKS, issuer,
audience, nonce and expiry) when it exchanged the code, and kept its claims as
``userinfo``. This security manager maps those claims, and asks the provider's
userinfo endpoint only when the token response carried no ID token.

Claims used: ``sub`` for the user name, as ``oidc_<sub>``, and ``given_name``,
``family_name``, ``email``, and ``groups`` as role keys for ``AUTH_ROLES_MAPPING``.
Not ``preferred_username``: Flask-AppBuilder signs a user in by user name alone, and
that claim is neither unique nor stable (OpenID Connect Core, 5.7), so a provider user
who chose the name of a local account (the admin the init container creates, say)
would get that account and its roles. ``sub`` is unique and stable per issuer, and the
prefix keeps it apart from every local user name, as Flask-AppBuilder does for Okta
and Auth0.
"""

import logging

from strata_security import StrataSecurityManager

PROVIDER = "oidc"

log = logging.getLogger(__name__)


def user_info(claims):
    """Flask-AppBuilder's user info from OpenID Connect claims."""
    subject = claims.get("sub")
    if not subject:
        log.error("the ID token names no user (no sub claim)")
        return {}
    return {
        "username": f"{PROVIDER}_{subject}",
        "first_name": claims.get("given_name", ""),
        "last_name": claims.get("family_name", ""),
        "email": claims.get("email", ""),
        "role_keys": claims.get("groups", []),
    }


class OidcSecurityManager(StrataSecurityManager):
    """The operator's security manager, which also knows the ``oidc`` provider."""

    def get_oauth_user_info(self, provider, resp):
        if provider != PROVIDER:
            return super().get_oauth_user_info(provider, resp)
        claims = (resp or {}).get("userinfo")
        if not claims:
            claims = self.appbuilder.sm.oauth_remotes[provider].userinfo()
        return user_info(dict(claims))
