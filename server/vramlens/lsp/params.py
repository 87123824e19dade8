"""The params of VRAM Lens's own requests, read or refused with InvalidParams and one sentence.

pygls hands a custom method's params over as it parsed them (a dict, or an object with attributes);
a wrong type there must be the client's error (-32602), never an internal one with a traceback."""

from __future__ import annotations

from pygls.exceptions import JsonRpcInvalidParams


def _field(params, name: str):
    if isinstance(params, dict):
        return params.get(name)
    return getattr(params, name, None)


def uri_param(params, method: str) -> str:
    uri = _field(params, "uri")
    if not isinstance(uri, str):
        raise JsonRpcInvalidParams(f"{method} needs `uri`, a document URI as text.")
    return uri


def optional_uri_param(params, method: str) -> str | None:
    return None if _field(params, "uri") is None else uri_param(params, method)
