"""Executes one DirectML descriptor on NumPy arrays, exactly as DirectML defines it.

The operators themselves are ``moves``: copies between views. Data moves as bits: every tensor
is viewed as the unsigned integer of its width before any indexing, so float16 NaN payloads,
negative zeros and denormals arrive unchanged and integers never pass through float. Tensor descs with strides are read from and written to flat buffers
through strided views, stride 0 included.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

from backends.base import masked_out, share_elements
from backends.numpy.moves import operator_moves, run_moves
from dmlgraph.dml.enums import FeatureLevel
from dmlgraph.dml.operators import OperatorDesc
from dmlgraph.dml.tensor import BufferTensorDesc
from dmlgraph.errors import DmlgraphError, as_array, counted
from dmlgraph.tensorio import UNWEIGHED_BYTES, available_memory, bytes_text, native_order


class ExecutionError(DmlgraphError):
    """The arrays given to the executor do not match the descriptor's tensor descs."""


# -- reading and writing tensors through their descs -----------------------------------------
def _read(desc: BufferTensorDesc, array: np.ndarray, label: str) -> np.ndarray:
    """The logical tensor (shape = desc.sizes) as bits, from a shaped array or a flat buffer."""
    array = as_array(array, label, ExecutionError)
    if not array.dtype.isnative and array.ndim == 1:  # of a flat buffer, only the part its
        array = array[: _last_index(desc) + 1]  # desc addresses is converted (a vast view)
    array = native_order(array)  # its values, as feeds
    expected = desc.data_type.numpy_dtype
    if array.dtype != expected:
        raise ExecutionError(
            f"{label}: array dtype {array.dtype} does not match DataType "
            f"{desc.data_type.full_name} ({expected})"
        )
    bits = np.atleast_1d(array).view(desc.data_type.bits_dtype)
    if desc.is_packed and bits.shape == desc.sizes:
        return bits
    if bits.ndim == 1:
        needed = _last_index(desc) + 1
        if bits.size < needed:
            raise ExecutionError(
                f"{label}: a flat buffer of {counted(bits.size, 'element')} is shorter than "
                f"the {counted(needed, 'element')} its tensor desc addresses"
            )
        flat = np.ascontiguousarray(bits[:needed])  # the addressed part: a buffer may be vast
        return as_strided(
            flat,
            shape=desc.sizes,
            strides=tuple(s * flat.itemsize for s in desc.effective_strides),
            writeable=False,
        )
    raise _not_a_buffer(desc, "array", array.shape, label)


def _not_a_buffer(
    desc: BufferTensorDesc, what: str, shape: tuple[int, ...], label: str
) -> ExecutionError:
    """An array neither shaped as a packed desc's sizes nor flat. For a strided desc only a
    flat buffer will do: "neither the tensor's sizes [2, 3]" of a (2, 3) array said otherwise."""
    if desc.is_packed:
        return ExecutionError(
            f"{label}: {what} shape {shape} is neither the tensor's sizes "
            f"{list(desc.sizes)} (packed) nor a flat buffer"
        )
    return ExecutionError(
        f"{label}: {what} shape {shape} is not a flat buffer, the only form a tensor desc "
        f"with Strides {list(desc.effective_strides)} (not packed) is read and written "
        f"through: pass a 1-D array of at least {counted(_last_index(desc) + 1, 'element')}"
    )


def _elements(desc: BufferTensorDesc, array: np.ndarray) -> np.ndarray:
    """The elements of an array a tensor desc reads or writes: all of a shaped one, the
    addressed ones of a flat buffer, over its memory (two tensors may share a buffer where
    their elements do not, as DirectML's interleaved tensors do). A buffer too short for
    the desc is taken whole: reading or writing it is refused."""
    if array.ndim == 1 and not (desc.is_packed and array.shape == desc.sizes):
        if array.size < _last_index(desc) + 1:
            return array
        step = array.strides[0]
        return as_strided(array, shape=desc.sizes, writeable=False,
                          strides=tuple(s * step for s in desc.effective_strides))
    return array


def _last_index(desc: BufferTensorDesc) -> int:
    return sum((n - 1) * s for n, s in zip(desc.sizes, desc.effective_strides))


def _write(desc: BufferTensorDesc, bits: np.ndarray, out: np.ndarray | None, label: str) -> np.ndarray:
    """Store a logical result per the output desc: packed -> shaped array; strided -> into a
    flat buffer (the caller's ``out`` when bound, else a new zeroed one)."""
    dtype = desc.data_type.numpy_dtype
    if out is None and desc.is_packed:
        return np.ascontiguousarray(bits).view(dtype).reshape(desc.sizes)
    if out is None:
        out = np.zeros(desc.total_tensor_size_in_bytes // dtype.itemsize, dtype=dtype)
    if problems := _unwritable(out, dtype):
        raise ExecutionError(
            f"{label}: a bound output must be a writable contiguous {dtype} array in this "
            f"machine's byte order, not {', '.join(problems)}"
        )
    if hidden := masked_out(out):
        raise ExecutionError(f"{label}: the bound output is {hidden}")
    if desc.is_packed and out.shape == desc.sizes:
        out.view(desc.data_type.bits_dtype)[...] = bits
        return out
    if out.ndim != 1:  # as _read takes inputs: another shape would be written row-major
        raise _not_a_buffer(desc, "bound array", out.shape, label)
    flat = out.view(desc.data_type.bits_dtype)
    needed = _last_index(desc) + 1
    if flat.size < needed:
        raise ExecutionError(
            f"{label}: a flat buffer of {counted(flat.size, 'element')} is shorter than the "
            f"{counted(needed, 'element')} its tensor desc addresses"
        )
    strides = desc.effective_strides  # distinct addresses: validate() refused any others
    view = as_strided(flat, shape=desc.sizes, strides=tuple(s * flat.itemsize for s in strides))
    view[...] = bits
    return out


def _unwritable(out: np.ndarray, dtype: np.dtype) -> list[str]:
    """What keeps a bound output from taking a result of ``dtype`` in place: a big-endian
    float32 array was told it must be a float32 array."""
    problems = []
    if out.dtype != dtype:
        problems.append(
            f"{out.dtype.str} (another byte order)"
            if out.dtype.newbyteorder("=") == dtype else str(out.dtype)
        )
    if not out.flags.c_contiguous:
        problems.append("not C-contiguous")
    if not out.flags.writeable:
        problems.append("read-only")
    return problems


def _refuse_beyond_memory(desc: OperatorDesc, bound: np.ndarray | None) -> None:
    """Refuse, before allocating, a run whose output cannot fit in the memory free here: the
    result (the output's sizes), and unbound with strides the fresh buffer of its
    TotalTensorSizeInBytes. A valid
    desc of TotalTensorSizeInBytes 2^50 raised NumPy's MemoryError, naming no operator."""
    (output,) = desc.outputs
    itemsize = output.data_type.bits_dtype.itemsize
    needed = output.element_count * itemsize
    if not output.is_packed and bound is None:
        needed += output.total_tensor_size_in_bytes // itemsize * itemsize
    if needed < UNWEIGHED_BYTES:
        return
    free = available_memory()
    if needed > free:
        fresh = (
            f"; bound, a buffer of the {counted(_last_index(output) + 1, 'element')} its "
            "strides address will do" if bound is None and not output.is_packed else ""
        )
        raise ExecutionError(
            f"{desc.name} output 0: sizes {list(output.sizes)}, TotalTensorSizeInBytes "
            f"{output.total_tensor_size_in_bytes}: the run allocates {bytes_text(needed)}, more "
            f"than this machine has free ({bytes_text(free)}){fresh}"
        )


def execute_operator(
    desc: OperatorDesc,
    inputs: Sequence[np.ndarray],
    feature_level: FeatureLevel | str | int = FeatureLevel.L6_4,
    outputs: Sequence[np.ndarray | None] | None = None,
) -> list[np.ndarray]:
    """Validate ``desc`` at ``feature_level``, then run it on ``inputs``.

    Each input is an array of its tensor desc's type (in either byte order: its values are
    read) shaped like the desc's sizes (packed descs) or a flat 1-D buffer read through the
    desc's strides. Outputs come back shaped when their desc is
    packed, else as flat buffers; ``outputs`` binds caller arrays to write into instead.
    Inputs are never modified.
    """
    if not isinstance(desc, OperatorDesc):
        raise ExecutionError(
            f"execute_operator takes a DML operator descriptor (operator_from_json reads one "
            f"from JSON), not {type(desc).__name__}"
        )
    for name, given in (("inputs", inputs), ("outputs", outputs)):
        if (given is not None or name == "inputs") and (
            isinstance(given, (np.ndarray, str, bytes, bytearray))
            or not isinstance(given, Sequence)
        ):
            raise ExecutionError(
                f"{desc.name}: {name} must be a list of arrays, one per {name[:-1]} tensor, "
                f"not {type(given).__name__}"
            )
    desc.validate(feature_level)
    if outputs is not None:
        if len(outputs) > len(desc.outputs):
            raise ExecutionError(
                f"{desc.name}: {len(outputs)} bound outputs for {len(desc.outputs)} output "
                "tensor"
            )
        for i, bound in enumerate(outputs):
            if bound is not None and not isinstance(bound, np.ndarray):
                raise ExecutionError(
                    f"{desc.name} output {i}: a bound output must be a numpy array, not "
                    f"{type(bound).__name__}"
                )
    input_descs = desc.inputs
    if len(inputs) != len(input_descs):
        raise ExecutionError(
            f"{desc.name}: expected {len(input_descs)} input arrays, got {len(inputs)}"
        )
    bits = [
        _read(d, a, f"{desc.name} input {i}") for i, (d, a) in enumerate(zip(input_descs, inputs))
    ]
    (output_desc,) = desc.outputs
    bound = outputs[0] if outputs else None
    if bound is not None and not desc.IN_PLACE:
        written = _elements(output_desc, bound)
        for i, (d, a) in enumerate(zip(input_descs, inputs)):
            if isinstance(a, np.ndarray) and share_elements(written, _elements(d, a)):
                raise ExecutionError(
                    f"{desc.name}: bound output 0 shares memory with input {i}; "
                    f"{desc.name} does not run in place (OperatorDesc.IN_PLACE), and "
                    "writing the result would change the input"
                )
    _refuse_beyond_memory(desc, bound)
    result = np.empty(output_desc.sizes, dtype=output_desc.data_type.bits_dtype)
    run_moves(operator_moves(desc, bits, result))
    return [_write(output_desc, result, bound, f"{desc.name} output 0")]
