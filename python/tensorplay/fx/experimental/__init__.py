"""Experimental parts of tp.fx (PyTorch's ``torch.fx.experimental``): op-level capture."""
