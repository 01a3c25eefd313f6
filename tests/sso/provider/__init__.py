"""A real OpenID provider for the single sign-on tests and for trying the demo's SSO user.

django-oauth-toolkit (an OAuth 2.0 / OpenID Connect authorization server on Django)
in a small project of its own: authorization code with PKCE, the device authorization
grant (RFC 8628), refresh tokens, revocation (RFC 7009) and introspection (RFC 7662),
with its own login and approval pages. ``python -m tests.sso.provider DIR`` serves it;
``DIR/provider.json`` (mode 0600: it holds passwords and a client secret) says on which
port, which users and which clients (see ``setup``).
"""
