"""Django settings of the test provider; its directory comes from ``VAULTFS_IDP_DIR``.

Short lifetimes on purpose: an access token lives ``access_token_seconds`` (from
``provider.json``), so that a vault session renewed after it has to use the refresh
token; the device flow is polled every second.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

_DIR = Path(os.environ["VAULTFS_IDP_DIR"])
_CONFIG = json.loads((_DIR / "provider.json").read_text())
ISSUER = f"http://127.0.0.1:{_CONFIG['port']}/o"

DEBUG = False
SECRET_KEY = (_DIR / "django-secret").read_text().strip()
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "tests.sso.provider.urls"
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [Path(__file__).parent / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": _DIR / "idp.sqlite3"}}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
USE_TZ = True
STATIC_URL = "/static/"
LOGIN_URL = "/login/"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"django": {"handlers": ["console"], "level": "WARNING"}},
}

OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": (_DIR / "oidc-key.pem").read_text(),
    "OIDC_ISS_ENDPOINT": ISSUER,
    "PKCE_REQUIRED": True,
    "ACCESS_TOKEN_EXPIRE_SECONDS": int(_CONFIG.get("access_token_seconds", 300)),
    "ROTATE_REFRESH_TOKEN": True,
    "SCOPES": {
        "openid": "OpenID Connect",
        "vault": "Use the document vault",
        "introspection": "Check tokens",
    },
    "DEFAULT_SCOPES": ["openid", "vault"],
    "OAUTH_DEVICE_VERIFICATION_URI": f"http://127.0.0.1:{_CONFIG['port']}/o/device/",
    "DEVICE_FLOW_INTERVAL": 1,
}
OAUTH2_PROVIDER["OAUTH2_VALIDATOR_CLASS"] = "tests.sso.provider.validator.Validator"
