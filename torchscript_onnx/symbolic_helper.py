"""Legacy import path: ``torchscript_onnx.symbolic_helper`` is ``torchscript_onnx.symbolic.symbolic_helper``."""

from .symbolic.symbolic_helper import *  # noqa: F401,F403
from .symbolic.symbolic_helper import (  # noqa: F401  (private legacy names are not star-exported)
    _get_const, _get_tensor_dim_size, _get_tensor_rank, _get_tensor_sizes, _is_constant, _is_none,
    _is_packed_list, _is_scalar_list, _is_tensor_list, _is_value, _maybe_get_const, _maybe_get_scalar,
    _unimplemented, _unpack_list,
)
