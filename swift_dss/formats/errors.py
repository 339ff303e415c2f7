"""Errors raised by the class formats, each mapping to one HTTP status."""


class ClassError(ValueError):
    """Malformed class information: answered with 400 and the message as reason."""

    http_status = 400


class ClassLimitError(ClassError):
    """Class information beyond a configured limit: answered with 413."""

    http_status = 413
