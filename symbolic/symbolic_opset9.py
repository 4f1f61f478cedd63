"""Opset 9: the base set. Most conversions live here and serve every later opset until a higher
module registers the op again. ONNX 9 added Where, Erf, Shrink, Sign, Sinh/Cosh/..., NonZero,
ConstantOfShape, EyeLike, Scatter, OneHot, MaxUnpool, Compress, IsNaN and typed MatMul/Flatten.

A thin facade: the functions live in topic modules under ``symbolic/opset9/`` and are re-exported
here so ``symbolic_opset9.relu(g, x)`` works as in the legacy exporter.
"""

from .opset9.math import *  # noqa: F401,F403
from .opset9.trigonometry import *  # noqa: F401,F403
from .opset9.rounding import *  # noqa: F401,F403
from .opset9.activation import *  # noqa: F401,F403
from .opset9.logical import *  # noqa: F401,F403
from .opset9.nn import *  # noqa: F401,F403
from .opset9.prim import *  # noqa: F401,F403
from .opset9.tensor import *  # noqa: F401,F403
from .opset9.control import *  # noqa: F401,F403
from .opset9.reduction import *  # noqa: F401,F403
from .opset9.rnn import *  # noqa: F401,F403
from .opset9.embedding import *  # noqa: F401,F403
from .opset9.indexing import *  # noqa: F401,F403
from .opset9.creation import *  # noqa: F401,F403
from .opset9.linalg import *  # noqa: F401,F403
from .opset9.joining import *  # noqa: F401,F403
from .opset9.autograd import *  # noqa: F401,F403
from .opset9.transformer import *  # noqa: F401,F403
from .opset9.sorting import *  # noqa: F401,F403
from .opset9.resize import *  # noqa: F401,F403
from .opset9.padding import *  # noqa: F401,F403
from .opset9.rearrange import *  # noqa: F401,F403
from .opset9.normalization import *  # noqa: F401,F403
from .opset9.loss import *  # noqa: F401,F403
from .opset9.quantized import *  # noqa: F401,F403
from .opset9.spectral import *  # noqa: F401,F403
