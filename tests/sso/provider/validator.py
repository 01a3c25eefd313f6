"""One client for both interactive grants, as identity providers usually allow.

django-oauth-toolkit ties an application to one grant type; vaultfs uses one client id
for the authorization code flow and the device authorization grant, so an application
registered for the authorization code may also use the device grant (and refresh).
"""

from __future__ import annotations

from typing import Any

from oauth2_provider.models import AbstractApplication
from oauth2_provider.oauth2_validators import OAuth2Validator

DEVICE_CODE = "urn:ietf:params:oauth:grant-type:device_code"


class Validator(OAuth2Validator):
    def validate_grant_type(
        self, client_id: str, grant_type: str, client: Any, request: Any, *args: Any, **kwargs: Any
    ) -> bool:
        if (
            grant_type == DEVICE_CODE
            and client.authorization_grant_type == AbstractApplication.GRANT_AUTHORIZATION_CODE
        ):
            return True
        return bool(
            super().validate_grant_type(client_id, grant_type, client, request, *args, **kwargs)
        )
