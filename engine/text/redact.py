"""Keeping API keys out of every error message, log line and run file: the values of
secret-looking environment variables, keys handed to a client, `sk-` and bearer tokens, and
the values of secret-looking variables a failing test left behind.
"""

from __future__ import annotations

import logging
import os
import re

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
# Word-bounded, since run files redact model answers too: "risk-assessment" is not a key.
_SK_TOKEN = re.compile(r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{8,}")
_AWS_ACCESS_KEY = re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")
_BEARER = re.compile(r"\b(Bearer)\s+[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE)
# A variable's name, in snake_case: `token`, `api_key`, `db_password`, `secretKey`; not
# `tokens` (a lexer's list) nor `key` alone (a dict's).
_SECRET_VARIABLE = re.compile(
    r"(?:^|_)(?:token|secret|password|passwd|credentials?|(?:api|access|private|secret)_?key)"
    r"(?:_|$)",
    re.IGNORECASE,
)
_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_REDACTED = "[REDACTED]"
_known_secrets: set[str] = set()  # keys handed to a client directly, not through the env


def remember_secret(secret: str) -> None:
    """Redact `secret` from now on (a key passed as an argument, not through the env)."""
    if len(secret) >= 8:
        _known_secrets.add(secret)


def redact(text: str) -> str:
    """`text` without the values of secret-looking env variables, client keys, `sk-` and
    AWS access keys or bearer tokens."""
    env_secrets = {
        value for name, value in os.environ.items() if _SECRET_NAME.search(name) and len(value) >= 8
    }
    for secret in sorted(env_secrets | _known_secrets, key=len, reverse=True):
        text = text.replace(secret, _REDACTED)
    text = _SK_TOKEN.sub(_REDACTED, text)
    text = _AWS_ACCESS_KEY.sub(_REDACTED, text)
    return _BEARER.sub(rf"\1 {_REDACTED}", text)


def redact_variable(name: str, value: str) -> str:
    """A variable's shown value: redacted whole when its name looks secret, else `redact`ed."""
    if _SECRET_VARIABLE.search(_CAMEL_HUMP.sub("_", name)):
        return _REDACTED
    return redact(value)


def redact_record(record: logging.LogRecord) -> bool:
    """A logging filter: the record's message and traceback redacted; it always passes."""
    try:
        record.msg, record.args = redact(record.getMessage()), None
        if record.exc_info:  # tracebacks carry exception messages too
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
    except Exception:
        record.msg, record.args = "(a litellm log record that could not be redacted)", None
    return True
