"""Authentication, pure: SASL conversations as step functions (no I/O, no asyncio).

- ``credential``: MongoCredential, validated from the connection string (URI engineer).
- ``saslprep``: RFC 4013 SASLprep over the standard library's ``stringprep``.
- ``scram``: the SCRAM-SHA-1/256 client (RFC 5802/7677 + MongoDB's rules) and its key cache.
- ``sasl``: the saslStart/saslContinue documents and reply checks.
- ``conversation``, ``plain``, ``x509``: one Conversation per mechanism
  (``first_command()``, ``step(reply)``, speculative ``speculative_document()``/``resume()``).
- ``negotiation``: the mechanism to use (saslSupportedMechs) and the speculative one.

The asyncio side that runs a conversation over a connection is
``asyncmongo.runtime.auth.CredentialAuthenticator``; the server side used by the simulator is
``asyncmongo.testing.scram``.
"""
