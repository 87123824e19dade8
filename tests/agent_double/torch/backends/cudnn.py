def version():
    return None
