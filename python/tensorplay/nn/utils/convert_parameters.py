"""parameters_to_vector / vector_to_parameters."""
import tensorplay as tp


def parameters_to_vector(parameters):
    """The parameters flattened and concatenated into one vector."""
    return tp.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copies slices of `vec` into the parameters (their data, in order)."""
    if not isinstance(vec, tp.Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    for param in parameters:
        n = param.numel()
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n
