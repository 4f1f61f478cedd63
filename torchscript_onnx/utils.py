"""Legacy import path: ``torchscript_onnx.utils`` is what ``torch.onnx.utils`` was.

The public names of the legacy exporter's ``torch.onnx.utils`` (torch 2.0 to 2.13), each served by
this exporter, so a program that calls ``torch.onnx.utils.<name>`` keeps working once ``install()``
has put this module under that name on a torch without the legacy exporter. ``export`` also takes
the options positionally, in torch 2.0's order, as programs written for it pass them.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import warnings
from collections.abc import Iterator

import torch

from . import api
from .builder import dtypes
from .audit import unconvertible_ops
from .pipeline.capture import is_in_onnx_export, select_model_mode_for_export
from .builder.options import OPTION_NAMES
from .registration import register_custom_op_symbolic, unregister_custom_op_symbolic

__all__ = [
    "disable_apex_o2_state_dict_hook", "export", "export_to_pretty_string", "exporter_context",
    "is_in_onnx_export", "model_signature", "register_custom_op_symbolic", "select_model_mode_for_export",
    "setup_onnx_logging", "unconvertible_ops", "unpack_quantized_tensor", "unregister_custom_op_symbolic",
    "warn_on_static_input_change",
]

# The options after ``f`` in the order torch 2.0's ``torch.onnx.export`` took them positionally
# (autograd_inlining came last, in 2.1): ExportOptions' first fields.
LEGACY_POSITIONAL_OPTIONS = OPTION_NAMES[:OPTION_NAMES.index("autograd_inlining") + 1]


def with_positional_options(positional: tuple, options: dict, function: str = "export") -> dict:
    """``options`` with the positional ones after ``f`` added by their torch 2.0 names."""
    if len(positional) > len(LEGACY_POSITIONAL_OPTIONS):
        raise TypeError(f"{function}() takes at most {3 + len(LEGACY_POSITIONAL_OPTIONS)} positional arguments "
                        f"(model, args, f, then {', '.join(LEGACY_POSITIONAL_OPTIONS)}); got {3 + len(positional)}")
    named = dict(zip(LEGACY_POSITIONAL_OPTIONS, positional))
    twice = sorted(set(named) & set(options))
    if twice:
        raise TypeError(f"{function}() got multiple values for argument(s) {twice}")
    return {**named, **options}


def export(model, args, f=None, *positional_options, **options) -> None:
    """``torch.onnx.utils.export``: ``torchscript_onnx.export`` with the legacy positional options."""
    api.export(model, args, f, **with_positional_options(positional_options, options))


def export_to_pretty_string(model, args, *positional_options, **options) -> str:
    """``torch.onnx.export_to_pretty_string`` of torch 2.0: the exported graph as text."""
    options = with_positional_options(positional_options, options, "export_to_pretty_string")
    for ignored in ("google_printer", "add_node_names", "do_constant_folding_default", "export_type"):
        options.pop(ignored, None)  # printing switches of the legacy printer; ours prints one form
    return api.export_to_pretty_string(model, args, **options)


def model_signature(model) -> inspect.Signature:
    return inspect.signature(model.forward if isinstance(model, torch.nn.Module) else model)


@contextlib.contextmanager
def disable_apex_o2_state_dict_hook(model) -> Iterator[None]:
    """Remove Apex O2's state_dict hooks (they return fp16 weights as fp32 copies) for the block."""
    removed = []
    if isinstance(model, torch.nn.Module):
        for module in model.modules():
            for key, hook in list(module._state_dict_hooks.items()):
                if type(hook).__name__ == "O2StateDictHook":
                    removed.append((module, key, hook))
                    del module._state_dict_hooks[key]
    try:
        yield
    finally:
        for module, key, hook in removed:
            module._state_dict_hooks[key] = hook


@contextlib.contextmanager
def setup_onnx_logging(verbose: bool) -> Iterator[None]:
    """With ``verbose``, the exporter's log (the ``torchscript_onnx`` logger) shows DEBUG for the block."""
    logger = logging.getLogger("torchscript_onnx")
    previous = logger.level
    if verbose:
        logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        logger.setLevel(previous)


@contextlib.contextmanager
def exporter_context(model, mode, verbose: bool) -> Iterator[tuple]:
    with (select_model_mode_for_export(model, mode) as mode_ctx,
          disable_apex_o2_state_dict_hook(model) as apex_ctx,
          setup_onnx_logging(verbose) as log_ctx):
        yield mode_ctx, apex_ctx, log_ctx


def warn_on_static_input_change(input_states) -> None:
    """Warn when a dict or str input changed during the trace: the graph keeps the traced one."""
    for given, traced in zip(input_states[0], input_states[1]):
        if isinstance(given, dict) and list(given) != list(traced):
            warnings.warn("a dict input of the model changed its keys during the trace; the ONNX graph keeps the "
                          "traced keys and their order", stacklevel=2)
        elif isinstance(given, str) and given != traced:
            warnings.warn("a str input of the model changed during the trace; strings are not graph "
                          "inputs or outputs, the graph keeps the traced value", stacklevel=2)


_QUANTIZED_STORAGE = {**dtypes.QUANTIZED_STORAGE, torch.quint4x2: torch.int8}


def unpack_quantized_tensor(value, cast_onnx_accepted: bool = True) -> tuple:
    """A quantized tensor as (integer values, scale, zero point); any other value as ``(value,)``."""
    if not isinstance(value, torch.Tensor) or value.dtype not in _QUANTIZED_STORAGE:
        return (value,)
    storage = _QUANTIZED_STORAGE[value.dtype]
    scale = torch.tensor(value.q_scale(), dtype=torch.double if cast_onnx_accepted else torch.float32)
    zero_point = torch.tensor(value.q_zero_point(), dtype=torch.int64 if cast_onnx_accepted else storage)
    return value.int_repr().to(storage), scale, zero_point
