"""Window functions (PyTorch's torch.signal.windows), written with TensorPlay ops."""
from tensorplay.signal.windows.windows import (bartlett, blackman, cosine, exponential, gaussian,
                                               general_cosine, general_hamming, hamming, hann,
                                               kaiser, nuttall)

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]
