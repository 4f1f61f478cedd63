"""transformers' key/value caches as tensors, so a traced graph can take and return them.

transformers models take and return their attention cache as an object: a ``DynamicCache`` (one
``DynamicLayer`` of keys and values per layer) or, for encoder-decoder models, an
``EncoderDecoderCache`` of two (self-attention and cross-attention). A trace carries tensors only.
A cache among the arguments becomes its tensors, layer by layer, key before value, named as HF
optimum names them: ``past_key_values.0.key``, ``past_key_values.0.value``, ... and, for an
EncoderDecoderCache, ``past_key_values.0.decoder.key``, ``.decoder.value``, ``.encoder.key``,
``.encoder.value`` per layer. Inside the traced forward a new cache is built from the traced
tensors (the caller's cache is never written to). A cache among the outputs becomes its tensors in
the same order, named ``present.0.key``, ...

Only caches that are their tensors and nothing else can be flattened: plain ``DynamicLayer``
layers, all filled or all empty. Other caches (``StaticCache``, quantized or offloaded ones,
sliding-window layers, whose Python counters a trace would fix) are refused with what to pass
instead.

transformers is not a dependency, and nothing here imports it: a cache object exists only once
``transformers.cache_utils`` is loaded, so that module is looked up in ``sys.modules``.
"""

from __future__ import annotations

import dataclasses
import re
import sys

from ..builder.errors import UnflattenableCacheError

INPUT_PREFIX = "past_key_values"
OUTPUT_PREFIX = "present"

_CACHE_MODULE = "transformers.cache_utils"
_MODELING_MODULE = "transformers.modeling_utils"
# The names this module gives: <prefix>.<layer>.[decoder.|encoder.](key|value)
_CACHE_NAME = re.compile(r"\w+\.\d+\.(?:(?:decoder|encoder)\.)?(?:key|value)")

# What to do instead, for a cache among the arguments / among the outputs (the model made it).
_WHAT_TO_PASS = ("pass a transformers.DynamicCache built from each layer's key and value tensors, "
                 "DynamicCache([(key, value), ...]) (no config, so every layer is a plain DynamicLayer; "
                 "an EncoderDecoderCache of two such caches for an encoder-decoder model), or export "
                 "without a cache (use_cache=False)")
_WHAT_TO_PASS_FOR_OUTPUTS = ("pass the model an empty cache of plain layers to fill, "
                             "past_key_values=transformers.DynamicCache() (an EncoderDecoderCache(DynamicCache(), "
                             "DynamicCache()) for an encoder-decoder model), or export without a cache "
                             "(use_cache=False)")


def _cache_utils():
    return sys.modules.get(_CACHE_MODULE)


def is_cache(value) -> bool:
    """Whether ``value`` is a transformers cache object (of any kind)."""
    module = _cache_utils()
    return module is not None and isinstance(value, module.Cache)


def is_cache_name(name: str) -> bool:
    """Whether ``name`` has the form of a name this module gives (``past_key_values.0.key``)."""
    return _CACHE_NAME.fullmatch(name) is not None


def may_return_cache(model) -> bool:
    """Whether ``model`` holds a transformers model, whose outputs may hold a cache."""
    modeling = sys.modules.get(_MODELING_MODULE)
    if modeling is None or not hasattr(model, "modules"):
        return False
    return any(isinstance(m, modeling.PreTrainedModel) for m in model.modules())


@dataclasses.dataclass(frozen=True)
class CacheLayout:
    """How a flattenable cache lays out as tensors: ``layers`` filled layers of the (self-attention)
    cache, ``cross_layers`` of the cross-attention cache when ``encoder_decoder``."""

    layers: int
    encoder_decoder: bool = False
    cross_layers: int = 0

    def slots(self) -> list[tuple[int, str, str]]:
        """(layer, part, key or value) of each tensor, in flattened order; part is "" for a
        DynamicCache, "decoder" (self-attention) or "encoder" (cross-attention) otherwise."""
        slots = []
        for layer in range(max(self.layers, self.cross_layers)):
            parts = ("decoder", "encoder") if self.encoder_decoder else ("",)
            for part, count in zip(parts, (self.layers, self.cross_layers)):
                if layer < count:
                    slots += [(layer, part, "key"), (layer, part, "value")]
        return slots

    def names(self, prefix: str) -> list[str]:
        return [".".join(str(p) for p in (prefix, layer, part, kind) if p != "") for layer, part, kind in self.slots()]

    def tensors(self, cache) -> list:
        caches = (cache.self_attention_cache, cache.cross_attention_cache) if self.encoder_decoder else (cache,)
        parts = dict(zip(("decoder", "encoder") if self.encoder_decoder else ("",), caches))
        return [getattr(parts[part].layers[layer], "keys" if kind == "key" else "values")
                for layer, part, kind in self.slots()]

    def rebuild(self, tensors):
        """A new cache of this layout holding ``tensors`` (in ``slots`` order)."""
        module = _cache_utils()
        pairs = {"": [], "decoder": [], "encoder": []}
        for (_, part, kind), tensor in zip(self.slots(), tensors):
            if kind == "key":
                pairs[part].append([tensor])
            else:
                pairs[part][-1].append(tensor)
        if not self.encoder_decoder:
            return _dynamic_cache(module, pairs[""])
        return module.EncoderDecoderCache(_dynamic_cache(module, pairs["decoder"]),
                                          _dynamic_cache(module, pairs["encoder"]))


def _dynamic_cache(module, pairs: list):
    """A DynamicCache of plain layers holding ``pairs`` (key, value), or an empty one.

    The layers are filled directly: ``update`` would concatenate each tensor to an empty one,
    a Concat node per tensor in the graph."""
    if not pairs:
        return module.DynamicCache()
    layers = []
    for key, value in pairs:
        layer = module.DynamicLayer()
        layer.lazy_initialization(key, value)
        layer.keys, layer.values = key, value
        layers.append(layer)
    cache = module.DynamicCache()
    cache.layers, cache.layer_class_to_replicate = layers, None
    return cache


def layout_of(cache, where: str, output: bool = False) -> CacheLayout:
    """The layout of ``cache`` (found at ``where``, among the outputs if ``output``), or
    UnflattenableCacheError saying what to pass instead."""
    module = _cache_utils()
    instead = _WHAT_TO_PASS_FOR_OUTPUTS if output else _WHAT_TO_PASS
    if type(cache) is module.EncoderDecoderCache:
        layers = _filled_layers(cache.self_attention_cache, f"{where} (its self_attention_cache)", module, instead)
        cross = _filled_layers(cache.cross_attention_cache, f"{where} (its cross_attention_cache)", module, instead)
        return CacheLayout(layers, encoder_decoder=True, cross_layers=cross)
    if type(cache) is module.DynamicCache:
        return CacheLayout(_filled_layers(cache, where, module, instead))
    raise UnflattenableCacheError(
        f"{where} is a {type(cache).__name__}, which cannot become graph inputs and outputs (only a DynamicCache, "
        f"or an EncoderDecoderCache of two, is its tensors and nothing else): {instead}")


def _filled_layers(cache, where: str, module, instead: str) -> int:
    if type(cache) is not module.DynamicCache:
        raise UnflattenableCacheError(f"{where} is a {type(cache).__name__}, not a DynamicCache: {instead}")
    if getattr(cache, "offloading", False):
        raise UnflattenableCacheError(f"{where} is a DynamicCache with offloading on: {instead}")
    for k, layer in enumerate(cache.layers):
        if type(layer) is not module.DynamicLayer:
            raise UnflattenableCacheError(
                f"{where} has a {type(layer).__name__} as layer {k} (the model's config asks for it), whose "
                f"Python state (a length counter, a window) a trace would fix: {instead}")
    filled = [layer.is_initialized for layer in cache.layers]
    if any(filled) and not all(filled):
        raise UnflattenableCacheError(
            f"{where} has {sum(filled)} of its {len(filled)} layers filled; a cache becomes graph inputs with "
            f"every layer filled or none: {instead}")
    return len(filled) if all(filled) else 0


def copied(cache):
    """A new cache holding the same tensors: a forward pass grows the cache it is given."""
    layout = layout_of(cache, "the cache")
    return layout.rebuild(layout.tensors(cache))


def outputs_as_tensors(value, where: str = "the model's output") -> tuple[object, dict[int, str]]:
    """``value`` (a forward's output) with each cache replaced by a tuple of its tensors, and the
    names of those tensors by their position among the flattened outputs (``torch.jit._flatten``'s
    order: tuples, lists and dict values depth first; None dropped). ``value`` itself when it
    holds no cache."""
    import torch

    names: dict[int, str] = {}
    count = 0

    def walk(item, at: str):
        nonlocal count
        if is_cache(item):
            layout = layout_of(item, at, output=True)
            for name in layout.names(OUTPUT_PREFIX):
                names[count] = name
                count += 1
            return tuple(layout.tensors(item))
        if isinstance(item, (list, tuple)) and _holds_cache(item):
            items = [walk(x, f"{at}[{k}]") for k, x in enumerate(item)]
            return list(items) if isinstance(item, list) else tuple(items)
        if isinstance(item, dict) and _holds_cache(item):
            return {key: walk(x, f"{at}[{key!r}]") for key, x in item.items()}
        count += len(torch.jit._flatten((item,))[0])
        return item

    if not _holds_cache(value):
        return value, {}
    return walk(value, where), names


def _holds_cache(value) -> bool:
    if is_cache(value):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_cache(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_cache(v) for v in value.values())
    return False
