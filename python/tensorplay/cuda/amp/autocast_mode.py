"""tp.cuda.amp.autocast: tp.autocast("cuda", ...) under its deprecated name."""
import warnings

import tensorplay as tp
from tensorplay.amp.autocast_mode import autocast as _autocast


class autocast(_autocast):
    """See :class:`tp.autocast`. ``tp.cuda.amp.autocast(args...)`` is deprecated; use
    ``tp.amp.autocast("cuda", args...)``."""

    def __init__(self, enabled=True, dtype=tp.float16, cache_enabled=True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)
