"""tp.library's internals: custom ops, schema inference, fake kernels' context, opcheck."""
