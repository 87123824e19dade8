"""Helpers shared by the process-handling tests here and the GPU tests."""


def running(pid: int) -> bool:
    """True while the process runs; a zombie nobody has reaped yet has ended."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
