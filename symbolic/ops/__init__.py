"""The built-in conversions, one module per topic. Each module holds every version of its ops side
by side: the opset-9 lowering first, then the versions registered ``since`` a higher opset.
Importing this package registers them all (``registry._load_builtins`` does, on first lookup)."""

from . import (  # noqa: F401 - imported for their registrations, in this order
    math,
    trigonometry,
    rounding,
    activation,
    logical,
    nn,
    prim,
    tensor,
    control,
    sequence,
    reduction,
    rnn,
    embedding,
    indexing,
    creation,
    linalg,
    joining,
    autograd,
    transformer,
    sorting,
    resize,
    padding,
    rearrange,
    normalization,
    loss,
    quantized,
    complex,
    spectral,
)
