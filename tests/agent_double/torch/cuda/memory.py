import traceback

_history = {"on": False, "entries": [], "max": 0}


def _python_frames():
    return [{"filename": f.filename, "line": f.lineno, "name": f.name}
            for f in reversed(traceback.extract_stack()[:-3])]


def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=0, **kwargs):
    _history.update(on=bool(enabled), max=max_entries)


def record(action, address, size):
    if _history["on"]:
        _history["entries"].append({"action": action, "addr": address, "size": size, "stream": 0,
                                    "frames": _python_frames()})
        del _history["entries"][:-_history["max"]]


def _snapshot():
    return {"segments": [], "device_traces": [list(_history["entries"])],
            "allocator_settings": {"expandable_segments": False}}
