"""The MONGODB-OIDC callback protocol, under PyMongo's names (``pymongo.auth_oidc``).

Give a machine callback as ``authMechanismProperties={"OIDC_CALLBACK": callback}`` or a
human-flow callback as ``{"OIDC_HUMAN_CALLBACK": callback}`` (with
``authMechanism="MONGODB-OIDC"``)::

    class MyCallback(OIDCCallback):
        async def fetch(self, context: OIDCCallbackContext) -> OIDCCallbackResult:
            token = await my_idp.get_token(timeout=context.timeout_seconds)
            return OIDCCallbackResult(access_token=token, expires_in_seconds=3600)

``fetch`` may also be a plain ``def`` (it then runs on the event loop: keep it quick), and a
bare callable taking the context works as well. The human callback gets the server's
:class:`OIDCIdPInfo` and the cached refresh token in the context.

The built-in environments need no callback: ``ENVIRONMENT:azure`` or ``ENVIRONMENT:gcp``
(with ``TOKEN_RESOURCE``; a ``TOKEN_RESOURCE`` containing a comma must be given in code, not
in the connection string, and it may contain a colon), ``ENVIRONMENT:k8s``, and
``ENVIRONMENT:test`` (the token in the file OIDC_TOKEN_FILE names).
"""

from asyncmongo.core.auth.oidc import (
    OIDCCallback,
    OIDCCallbackContext,
    OIDCCallbackResult,
    OIDCIdPInfo,
)

__all__ = ["OIDCCallback", "OIDCCallbackContext", "OIDCCallbackResult", "OIDCIdPInfo"]
