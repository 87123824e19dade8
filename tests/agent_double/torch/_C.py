from . import cuda


def _cuda_attach_out_of_memory_observer(observer):
    cuda.OBSERVERS.append(observer)
