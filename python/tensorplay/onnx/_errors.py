"""The exporter's errors (all are RuntimeErrors, as torch.onnx's are)."""
__all__ = ['OnnxExportError', 'UnsupportedOperatorError', 'DynamicShapeError']


class OnnxExportError(RuntimeError):
    """The model cannot be exported (the message says why and where)."""


class UnsupportedOperatorError(OnnxExportError):
    """An op without an ONNX translation; ``op`` is its handle, ``node`` the graph node."""

    def __init__(self, msg, op=None, node=None):
        super().__init__(msg)
        self.op = op
        self.node = node


class DynamicShapeError(OnnxExportError):
    """A dynamic axis the model specialises on (or one that cannot be expressed)."""
