"""Graph passes (PyTorch's ``torch.fx.passes``)."""
