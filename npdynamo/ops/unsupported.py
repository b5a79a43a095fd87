"""The refusal every op rule and call normaliser raises: a leaf of the ops stage."""


class UnsupportedArguments(Exception):
    """A valid NumPy call that cannot become a graph op (``out=``, ``where=``, a boolean mask...).

    The translator turns it into a graph break; the message says what was not supported.
    """
