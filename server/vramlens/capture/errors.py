class CaptureError(Exception):
    """A capture or snapshot that cannot be used; the message is one sentence for the user."""
