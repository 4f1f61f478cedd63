"""onnxruntime latency of several files of one model, timed so that their ratios mean something.

Every file gets a session on the CPU provider with default graph optimisations and one intra- and
one inter-op thread, three warm-up runs, then ``runs`` rounds in which every session runs once, in
an order that rotates between rounds. Each run is timed in CPU time of this process
(``time.process_time``), which other processes on a shared machine inflate far less than wall time.
``AGAIN`` names a second session of our own file run in the same rounds: two sessions of the very
same graph differ by that much, so ratios closer to 1 than it are noise.
"""

from __future__ import annotations

import time

from bench import exporters, models

AGAIN = "ours again"


def rotations(names: list, rounds: int):
    """``names`` in an order that rotates each round, so none always runs first or right after
    another's garbage (an onnxruntime session that always ran first measured up to 8% slower
    than a second session of the same file: Whisper-tiny's encoder, 1 thread)."""
    for r in range(rounds):
        k = r % len(names) if names else 0
        yield names[k:] + names[:k]


def session(path, optimized_path=None):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3  # not the warning that an optimised file may hold hardware-specific ops
    if optimized_path:
        opts.optimized_model_filepath = optimized_path
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


def cpu_times(paths: dict, args, runs: int) -> tuple[dict, dict]:
    """``({name: [CPU seconds per run] or an error string}, {name: the outputs of its first run})``.

    The example tensors feed each graph's inputs in order; a graph may have fewer inputs than
    tensors (an exporter dropped trailing unused ones), never more."""
    tensors = [t.detach().cpu().numpy() for t in models.flat_tensors(args)]
    sessions, feeds, times, outputs = {}, {}, {}, {}
    for name, path in paths.items():
        try:
            sess = session(path)
            inputs = sess.get_inputs()
            if len(inputs) > len(tensors):
                raise ValueError(f"{len(inputs)} graph inputs for {len(tensors)} example tensors")
            feeds[name] = {i.name: t for i, t in zip(inputs, tensors)}
            outputs[name] = sess.run(None, feeds[name])
            for _ in range(2):
                sess.run(None, feeds[name])
            sessions[name], times[name] = sess, []
        except Exception as e:  # noqa: BLE001 - reported in the table
            times[name] = exporters.short_error(e)
    for order in rotations(list(sessions), runs):
        for name in order:
            start = time.process_time()
            sessions[name].run(None, feeds[name])
            times[name].append(time.process_time() - start)
    return times, outputs


def outputs_agree(a: list, b: list) -> bool:
    """Whether two runs' outputs match within float noise (NaN where both have NaN)."""
    import numpy as np

    return len(a) == len(b) and all(
        x.shape == y.shape and np.allclose(x, y, rtol=1e-3, atol=1e-4, equal_nan=True) for x, y in zip(a, b))
