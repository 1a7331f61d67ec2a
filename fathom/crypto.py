"""Secrets at rest: Fernet (AES-128-CBC + HMAC) keyed by FATHOM_ENCRYPTION_KEY.

The variable may list several keys separated by commas: the first encrypts, every one decrypts, so
a key is rotated by putting the new one first and re-saving the secrets (`fathom llm rotate-keys`)."""

from functools import cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


def encrypt(plaintext: str) -> str:
    return _fernet(settings.FATHOM_ENCRYPTION_KEY).encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    """The plaintext; a token no configured key opens is an error naming the variable."""
    try:
        return _fernet(settings.FATHOM_ENCRYPTION_KEY).decrypt(token.encode()).decode()
    except InvalidToken:
        raise ImproperlyConfigured(
            "a stored secret cannot be decrypted with FATHOM_ENCRYPTION_KEY (was the key changed? "
            "list the old key after the new one, comma-separated)"
        ) from None


def rotate(token: str) -> str:
    """The same secret encrypted with the first (newest) key."""
    return _fernet(settings.FATHOM_ENCRYPTION_KEY).rotate(token.encode()).decode()


@cache
def _fernet(keys: str) -> MultiFernet:
    try:
        return MultiFernet([Fernet(key.strip()) for key in keys.split(",") if key.strip()])
    except (ValueError, TypeError):
        raise ImproperlyConfigured("FATHOM_ENCRYPTION_KEY must be one or more comma-separated Fernet keys "
                                   "(generate one with: python -c 'from cryptography.fernet import Fernet; "
                                   "print(Fernet.generate_key().decode())')") from None
